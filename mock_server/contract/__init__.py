"""The contract layer: the OpenAPI documents as data, and checking JSON against them."""
