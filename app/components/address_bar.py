"""Keeps the address bar on the workload lab's preset (app/views/lab.py), so the link
can be shared. (A scenario's page writes its own: the player, player.js.)

The browser's one reader and writer of the address (address.js) writes the query a
moment after the last change, replacing the entry (Panel's Location model would push one
at every change, and message the server back); other query parameters are kept. Setting
``load`` opens that query as a new page (the lab's preset picker, from a group of presets
to the other: each is a page of its own), so the lab has no entry of its own to go Back
or Forward to: it sends Python nothing.
"""

from __future__ import annotations

import param

from app.components.esm import FileComponent
from app.data.url import browser_names


class AddressBar(FileComponent):
    query = param.String(default="", doc="The query string that reopens the app here")

    load = param.String(
        default="", doc="A query to load as a new page (the lab's other group of presets)"
    )

    address = param.Dict(default=browser_names(), constant=True, doc="url.py's names")

    _esm = "address_bar.js"
