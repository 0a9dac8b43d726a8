"""Report sections, one module each (json / markdown / html functions); the report wires them."""
