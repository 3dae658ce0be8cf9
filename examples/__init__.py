"""Examples of integrating with the ordering service, tested against the sandbox."""
