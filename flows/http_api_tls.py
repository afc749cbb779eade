"""No bundle of certificate authorities parsed for a Prefect API reached over plain http.

Prefect's clients build an SSL context for the API whatever its scheme, from ``PREFECT_API_SSL_CERT_FILE`` or else
certifi's bundle of about 150 roots: 34 ms of a core each on the 2-core machine, and a command makes four of them
(its flow run's client, the event and log workers' clients, the server version check: 0.14-0.4 s of a 240-episode
PROGRESS construct, most of it before the flow starts), a Dask share's task run two more. Over http no certificate
is ever checked, so while the API's address is an http one, the setting names ``flows/http-api-ca.pem`` instead, one
public root shipped with the package (0.7 ms a context): a file that stays where it is for as long as the code does.
An https address, or a value the user set, is left as it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

SETTING = "PREFECT_API_SSL_CERT_FILE"
ONE_ROOT = Path(__file__).with_name("http-api-ca.pem")


def skip_ca_bundle_for_http_api() -> None:
    """Point ``PREFECT_API_SSL_CERT_FILE`` at the one-root file while ``PREFECT_API_URL`` is an http address; take
    that back where it is not (a warm process's fork inherits an earlier command's environment). A URL from a Prefect
    profile instead of the environment is not known here: nothing is set for it."""
    set_by_us = os.environ.get(SETTING) == str(ONE_ROOT)
    if urlsplit(os.environ.get("PREFECT_API_URL", "")).scheme != "http":
        if set_by_us:
            del os.environ[SETTING]
    elif SETTING not in os.environ:
        os.environ[SETTING] = str(ONE_ROOT)
