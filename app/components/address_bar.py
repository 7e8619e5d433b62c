"""Keeps the address bar on the workload lab's preset (app/views/lab.py), so the link can
be shared (a scenario's page writes its own: player.js). address.js writes the query a
moment after the last change, replacing the entry, other parameters kept (Panel's Location
model would push one at every change, and message the server back); ``load`` opens a query
as a new page (the lab's other group of presets): the lab has no entry of its own for Back
or Forward, and sends Python nothing (address_bar.js)."""

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
