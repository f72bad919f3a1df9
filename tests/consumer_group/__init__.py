"""Consumer groups (KIP-848): the member and group model, reconciliation and the epoch rules, on plain values."""
