"""One module per group of `rolecall` commands; each adds its subcommands to the parser it is given
(`add_commands`) and holds their handlers, sharing only `gateway.cli._shared` and the client."""
