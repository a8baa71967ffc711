"""The web chat widget: `GET /widget.js`, its HTTP API under `/widget/v1`, the demo page at `/`.

A thin adapter over the core (docs/widget.md): inbound, a browser's message becomes "this person
says this in their conversation with this role"; outbound, one committed-event reader fans the
conversation's events out to every open widget (`stream.Fanout`).

    sites.py     which sites embed the widget, their secrets and allowed origins
    tokens.py    signed user tokens (the host site's), visitor and session tokens (ours)
    limits.py    the per-identity posting rate
    present.py   events as the widget shows them
    stream.py    one reader of committed events, fanned out to the open streams
    routes.py    the HTTP routes and their wiring into the application
"""
