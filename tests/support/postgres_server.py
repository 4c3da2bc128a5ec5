"""A throw-away PostgreSQL server for the tests and the SQL benchmark.

Debian's ``postgresql`` package puts its programs in
``/usr/lib/postgresql/<version>/bin`` (not on PATH). This module runs
``initdb`` on a fresh data directory under /tmp, starts ``pg_ctl`` on a free
loopback port with its Unix socket in that directory, yields the connection
settings, and in a ``finally`` stops the server and deletes the directory.

PostgreSQL refuses to run as root, so as root every program runs through
``runuser -u postgres --`` (the package creates that user); as any other
user (a developer, a GitHub runner) it runs as that user.

Run it by hand to get a server for a session at the Python prompt::

    .venv/bin/python tests/support/postgres_server.py    # prints the settings; Ctrl-C stops it
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = (
    "PostgreSQL is not installed: install Debian's package with "
    "`apt-get install postgresql` (or set QKV_PG_BIN to the directory that holds "
    "initdb and pg_ctl)"
)
DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None if there is none.

    ``QKV_PG_BIN`` wins when set; then the newest Debian version; then PATH.
    """
    override = os.environ.get("QKV_PG_BIN")
    if override:
        path = Path(override)
        return path if (path / "initdb").is_file() and (path / "pg_ctl").is_file() else None

    def version(bin_dir: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", bin_dir.parent.name))

    debian = [Path(p) for p in sorted(Path("/").glob(DEBIAN_BIN_GLOB.lstrip("/")))]
    debian = [p for p in debian if (p / "initdb").is_file() and (p / "pg_ctl").is_file()]
    if debian:
        return max(debian, key=version)
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    return None


@dataclass(frozen=True)
class Server:
    """A running server: ``psycopg.connect(**server.settings)`` reaches it."""

    settings: dict
    directory: Path  # data directory, socket and log; deleted on stop
    version: str


def _free_port() -> int:
    # Bind to port 0 and let the kernel choose; the tiny race until PostgreSQL
    # binds it is handled by retrying the start on another port.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user() -> list[str]:
    """The command prefix that runs a program as a user PostgreSQL accepts."""
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        raise RuntimeError("running as root needs `runuser` (util-linux) to start PostgreSQL")
    return ["runuser", "-u", "postgres", "--"]


def _run(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed with exit code {result.returncode}:\n{result.stdout}{result.stderr}"
        )


@contextlib.contextmanager
def running_postgres(bin_dir: Path | None = None, attempts: int = 3) -> Iterator[Server]:
    """Start a throw-away PostgreSQL and yield it as a ``Server``.

    ``server.settings`` (``host``, ``port``, ``user``, ``dbname``) go to
    ``psycopg.connect(**server.settings)``. The server listens on 127.0.0.1
    only and trusts local connections; ``fsync`` is off because the data
    directory is deleted afterwards anyway. Other settings are the defaults.

    Raises RuntimeError with ``INSTALL_HINT`` when PostgreSQL is missing, and
    with the server's log when it does not start.
    """
    bin_dir = bin_dir or find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(INSTALL_HINT)
    prefix = _as_server_user()
    top = Path(tempfile.mkdtemp(prefix="qkv-postgres-"))
    data, log = top / "data", top / "server.log"
    started = False
    try:
        if prefix:
            shutil.chown(top, user="postgres")
        _run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            cwd=top,
        )
        for attempt in range(attempts):
            port = _free_port()
            options = f"-p {port} -k {top} -c listen_addresses=127.0.0.1 -c fsync=off"
            start = [
                *prefix,
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ]
            result = subprocess.run(start, cwd=top, capture_output=True, text=True)
            if result.returncode == 0:
                started = True
                break
            if attempt == attempts - 1:
                server_log = log.read_text() if log.exists() else "(no log)"
                raise RuntimeError(f"pg_ctl start failed:\n{result.stdout}{result.stderr}\n{server_log}")
        settings = {"host": "127.0.0.1", "port": port, "user": "postgres", "dbname": "postgres"}
        yield Server(settings, top, server_version(bin_dir))
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                cwd=top,
                capture_output=True,
            )
        shutil.rmtree(top, ignore_errors=True)


def server_version(bin_dir: Path) -> str:
    """The version of the server in ``bin_dir``, e.g. "15.18"."""
    out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True)
    found = re.search(r"\(PostgreSQL\) (\S+)", out.stdout)  # "postgres (PostgreSQL) 15.18 (Debian ...)"
    return found.group(1) if found else "unknown"


if __name__ == "__main__":
    import time

    with running_postgres() as server:
        print(f"PostgreSQL {server.version} is running in {server.directory}; connect with")
        print(f"psycopg.connect(**{server.settings})")
        print("Ctrl-C stops it and deletes its data directory.")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
