"""No bundle of certificate authorities parsed for a Prefect API reached over plain http.

Prefect's clients build an SSL context for the API whatever its scheme, from ``PREFECT_API_SSL_CERT_FILE`` or else
certifi's bundle of about 150 roots: 34 ms of a core each on the 2-core machine, and a command makes four of them
(its flow run's client, the event and log workers' clients, the server version check: 0.14-0.4 s of a 240-episode
PROGRESS construct, most of it before the flow starts), a Dask share's task run two more. Over http no certificate
is ever checked, so while the API's address is an http one, the setting names a file holding one root instead
(0.7 ms a context). An https address, or a value the user set, is left as it is.

Imports only the standard library until it writes the file (certifi, a dependency of Prefect's and httpx's).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

SETTING = "PREFECT_API_SSL_CERT_FILE"
FILE_NAME = "benchwright-http-api-ca.pem"  # in PREFECT_HOME


def skip_ca_bundle_for_http_api(home: Path) -> None:
    """Point ``PREFECT_API_SSL_CERT_FILE`` at a one-root file in ``home`` (made at the first need) while
    ``PREFECT_API_URL`` is an http address; take that back where it is not (a warm process's fork, a test, inherits
    an earlier command's environment). A file of ours named for another home is replaced: that home may be gone. A
    URL from a Prefect profile instead of the environment is not known here: nothing is set for it."""
    current = os.environ.get(SETTING)
    set_by_us = current is not None and Path(current).name == FILE_NAME
    if urlsplit(os.environ.get("PREFECT_API_URL", "")).scheme != "http":
        if set_by_us:
            del os.environ[SETTING]
        return
    if current is not None and not set_by_us:
        return  # the user's
    ours = home / FILE_NAME
    if not ours.is_file():
        _write_one_root(ours)
    os.environ[SETTING] = str(ours)


def _write_one_root(path: Path) -> None:
    """The first certificate of certifi's bundle, written whole before it is renamed into place (commands starting
    together each write their own copy; the last rename wins, every copy the same)."""
    import certifi

    bundle = Path(certifi.where()).read_text()
    end = "-----END CERTIFICATE-----"
    first = bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(first + "\n")
    os.replace(partial, path)
