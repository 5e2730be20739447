"""The version of router (one place: plan.json, reports and `router --version` say it)."""

__version__ = "0.1.0"
