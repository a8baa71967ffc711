"""Slack: each role is a Slack app whose bot a person DMs; the DM is their conversation with the
role, the same conversation they have in the widget (docs/slack.md).

    apps.py       one slack-bolt app per role, configured explicitly (no environment, no files)
    inbound.py    Slack events into the timeline: messages, edits, deletions, DM commands
    answers.py    a click on an approval's button: the person's answer
    approvals.py  an approval as Block Kit: the question with its buttons, then its outcome
    delivery.py   the timeline into Slack: the role's messages, others' as quoted context,
                  retractions as deletions, approvals with buttons, "working…" while a turn runs
    install.py    installing in many workspaces over OAuth, kept in our database
    routes.py     wiring: /slack/{role}/events, /interactivity, /install and /oauth_redirect,
                  Socket Mode, the delivery workers
"""
