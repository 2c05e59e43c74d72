// turnout dashboard: draws the two charts from /ui/data.json and refreshes them.
(function () {
  "use strict";
  var charts = {};
  var palette = ["#c01048", "#175cd3", "#b54708", "#12805c", "#6941c6", "#0e9384"];

  function width(el) { return Math.max(260, el.clientWidth - 8); }

  function hourLabel(u, vals) {
    return vals.map(function (v) { return new Date(v * 1000).toISOString().slice(11, 16); });
  }

  function dayLabel(u, vals) {
    return vals.map(function (v) { return new Date(v * 1000).toISOString().slice(5, 10); });
  }

  function draw(id, opts, data) {
    var el = document.getElementById(id);
    if (!el || !window.uPlot) { return; }
    opts.width = width(el);
    opts.height = 220;
    if (charts[id] && charts[id].series.length === opts.series.length) {
      charts[id].setData(data);
      return;
    }
    if (charts[id]) { charts[id].destroy(); }
    el.textContent = "";
    charts[id] = new uPlot(opts, data, el);
  }

  function failovers(data) {
    var routes = Object.keys(data.series);
    var series = [{ label: "hour (UTC)", value: function (u, v) {
      return v == null ? "-" : new Date(v * 1000).toISOString().slice(11, 16);
    } }];
    var rows = [data.x];
    routes.forEach(function (route, i) {
      series.push({ label: route, stroke: palette[i % palette.length], width: 2 });
      rows.push(data.series[route]);
    });
    if (!routes.length) {
      series.push({ label: "no failover", stroke: "#98a2b3", width: 1 });
      rows.push(data.x.map(function () { return 0; }));
    }
    draw("failover-chart", {
      series: series,
      axes: [{ values: hourLabel }, { label: "failovers" }],
      scales: { x: { time: false } },
    }, rows);
  }

  function usage(data) {
    draw("usage-chart", {
      series: [
        { label: "day", value: function (u, v) {
          return v == null ? "-" : new Date(v * 1000).toISOString().slice(0, 10);
        } },
        { label: "tokens", stroke: "#175cd3", fill: "rgba(23,92,211,.12)", width: 2, scale: "t" },
        { label: "cost ($)", stroke: "#12805c", width: 2, scale: "usd",
          value: function (u, v) { return v == null ? "-" : "$" + v.toFixed(4); } },
      ],
      axes: [
        { values: dayLabel },
        { scale: "t", label: "tokens" },
        { scale: "usd", side: 1, label: "USD", grid: { show: false } },
      ],
      scales: { x: { time: false } },
    }, [data.x, data.tokens, data.cost]);
  }

  function refresh() {
    fetch("/ui/data.json", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        failovers(data.failovers);
        usage(data.usage);
      })
      .catch(function () { /* the next refresh tries again */ });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!document.getElementById("failover-chart")) { return; }
    refresh();
    setInterval(refresh, 10000);
    window.addEventListener("resize", function () {
      Object.keys(charts).forEach(function (id) {
        var el = document.getElementById(id);
        if (el) { charts[id].setSize({ width: width(el), height: 220 }); }
      });
    });
  });
})();
