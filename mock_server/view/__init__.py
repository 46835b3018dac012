"""The live view: one page, served by the mock at `/__admin/ui`, showing a person at a browser
what clients did to it (the journal, each rule broken, the coverage, the world, the faults),
and what a person does from it (copy a request as curl, clear the journal, arm a fault).

Its static files are `static/` (served by `mock_server.http.view_page`: no build step, nothing
from elsewhere); `shown.py` turns requests and records into the texts it shows and `browse.py`
pages the world's records; the data comes from the admin API, the updates from its event
stream (`live.py`).
"""
