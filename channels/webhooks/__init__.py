"""Webhooks: other systems tell the gateway that their work items changed (inbound), and the
gateway tells other systems what happens in its conversations (outbound) — both signed,
idempotent and surviving restarts (docs/webhooks.md).

    sources.py     the operator's sources (`manifests/sources/*.yaml`) with their secrets
    signatures.py  Standard Webhooks and `X-Hub-Signature-256`: checking deliveries, and
                   signing them as a sender does (`rolecall hook test`)
    inbound.py     POST /hooks/{source}: verify, map (`core/model/webhooks.py`), commit the delivery
                   with everything it does, answer
    routes.py      wiring the inbound half into the application
    outbound.py    committed events to the operators' endpoints, as Standard Webhooks
"""
