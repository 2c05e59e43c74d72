# turnout's gateway: `pip install .` on a slim Python, run as a user without privileges.
# The configuration file is mounted at /etc/turnout/turnout.yaml; its secrets come from the
# environment (`${VAR}` in the file). See docs/replicas.md.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . \
    && useradd --system --create-home --uid 10001 turnout \
    && install -d -o turnout /home/turnout/spill \
    && rm -rf /src

WORKDIR /home/turnout
USER turnout
EXPOSE 4000
# SIGTERM drains within server.shutdown_grace_seconds; the exec form passes it to turnout.
STOPSIGNAL SIGTERM
CMD ["turnout", "serve", "--config", "/etc/turnout/turnout.yaml", "--host", "0.0.0.0", "--port", "4000"]
