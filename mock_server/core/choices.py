"""The values the command line offers, and the defaults it shows, for options whose meaning
lives higher up: named here, below every layer, so that the command reads (and refuses) its
options and prints its help without importing the layers that act on them, and those layers
take them from here."""

LOG_FORMATS = ("text", "json")  # the request log's (`mock_server.http.request_log`)
HOST_CHECKS = ("admin", "all")  # what the host guard covers: the admin API, or every path
# Each report format, and the suffix of a file that names it (`mock_server.reports.report_files`).
REPORT_FORMATS = {"json": ".json", "text": ".txt", "junit": ".xml", "markdown": ".md"}
JOURNAL_BUDGET_MIB = 32  # what the request journal keeps by default (`services.journal`)
# Seconds a proxied target may take to connect, or between two reads (`proxy.forward`).
PROXY_TIMEOUT_SECONDS = 30.0
