"""The session screen's widgets (steps, detail, gauges), its messages and its view model."""
