"""The proxy side: a target platform's answers checked, compared and recorded."""
