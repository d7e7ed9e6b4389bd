"""The site's pages, one module per page family, rendered from the evidence bundle alone (see :mod:`.site`)."""

from sitegen.publish.pages.site import render_site, write_page_listing

__all__ = ["render_site", "write_page_listing"]
