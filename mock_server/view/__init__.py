"""The live view: one page, served by the mock at `/__admin/ui`, showing a person at a browser
what clients did to it (the journal, each rule broken, the coverage, the world, the faults).

`page.py` serves the page and its static files (no build step, nothing from elsewhere), and
`shown.py` turns requests and records into the texts it shows; the data comes from the admin
API, the updates from its event stream (`mock_server.live`).
"""
