"""The mock's services around the state: tokens, the journal, faults, the request record."""
