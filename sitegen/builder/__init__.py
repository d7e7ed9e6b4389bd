"""The build: load, embed, rank, score, write evidence, render, then swap the site in.

:mod:`.options` says what to build; :mod:`.output` guards the output folder; :mod:`.load` reads and checks every
input before any work; :mod:`.corpus` builds one corpus's evidence; :mod:`.site` runs the whole flow in a fresh
folder beside the output and renames it into place only when complete, so a failed build leaves the previous
site untouched.
"""

from sitegen.builder.options import BuildOptions
from sitegen.builder.site import BuildResult, build_site

__all__ = ["BuildOptions", "BuildResult", "build_site"]
