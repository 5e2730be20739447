"""Moved to router.models.placement; this name stays for code not yet updated."""

from router.models.placement import Placement, Resources

__all__ = ["Placement", "Resources"]
