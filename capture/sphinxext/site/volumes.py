"""References to the other volumes of the series: {vol}`burn:fusion-decorator`.

    {vol}`burn:fusion-decorator`              -> burn 卷「Fusion 装饰器」 (title from burn's inventory)
    {vol}`Fusion 装饰器 <burn:fusion-decorator>` -> the same, with the title written here

`book_volumes` in conf.py says, for each volume, how the text names it, where its pages
are published and where its Sphinx inventory (objects.inv) is read from: a path relative
to the configuration directory, or an http(s) URL. A label is looked up as `std:label`,
then as a page (`std:doc`).

- Inventory available, label found: a link, with the title from the inventory unless the
  reference gives its own.
- Inventory available, label missing: a warning (an error under -W): the other volume
  renamed or dropped that section, or the reference has a typo.
- Inventory absent or unreachable (not published yet, or offline): plain text; the first reference
  to that volume on a page is followed by one short note that says what the volume is (its `about`)
  and that its references become links once it is published; one info line per volume in the build
  log, never a warning, so a strict offline build passes.

A volume's inventory defaults to `objects.inv` under its URL when the URL is absolute (conf.py's
BOOK_<VOLUME>_URL): a published volume is linked by giving its address alone.

References are resolved when pages are written; when a volume's inventory changes,
the pages that refer to it are rebuilt (site/depends.py).
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import ReferenceRole
from sphinx.util.inventory import InventoryFile

from capture.sphinxext.site.depends import Dependency

logger = logging.getLogger(__name__)

FETCH_TIMEOUT_S = 5
LOOKUP_TYPES = ("std:label", "std:doc")


class vol_reference(nodes.Inline, nodes.TextElement):
    """A reference into another volume, resolved when the page is written."""


@dataclass
class Volume:
    key: str
    title: str  # how the text names the volume, e.g. "burn 卷"
    url: str  # where its pages are published; relative URLs are relative to this site's root
    about: str = ""  # what the volume is, for the reader (said once per page while it cannot be linked)
    source: str = ""  # where its inventory was looked for
    items: dict[str, tuple[str, str]] | None = None  # label -> (location, title); None: unavailable
    why: str = ""  # why unavailable
    digest: str = ""  # of the inventory bytes: pages are rebuilt when it changes
    unlinked: int = field(default=0)  # references written as plain text in this build


def _read_inventory(source: str, confdir: str) -> bytes:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=FETCH_TIMEOUT_S) as resp:
            return resp.read()
    return Path(confdir, source).read_bytes()


def load_volume(key: str, spec: dict[str, Any], confdir: str) -> Volume:
    """Read one volume's inventory; never raises (an unusable inventory leaves items None)."""
    url = spec.get("url") or ""
    vol = Volume(
        key=key,
        title=spec.get("title") or f"{key} 卷",
        url=url,
        about=spec.get("about") or "",
        source=spec.get("inventory") or (posixpath.join(url, "objects.inv") if "://" in url else ""),
    )
    if not vol.source:
        vol.why = "没有配置 inventory"
        return vol
    try:
        data = _read_inventory(vol.source, confdir)
        inv = InventoryFile.load(io.BytesIO(data), "", lambda _base, loc: loc)
    except Exception as exc:  # missing file, network, corrupt inventory: all degrade the same way
        vol.why = f"{vol.source}: {exc}"
        return vol
    vol.digest = hashlib.sha256(data).hexdigest()
    vol.items = {}
    for objtype in reversed(LOOKUP_TYPES):  # std:label wins over a page of the same name
        for name, (_proj, _ver, location, dispname) in inv.get(objtype, {}).items():
            vol.items[name] = (location, name if dispname in ("", "-") else dispname)
    return vol


class VolumeRole(ReferenceRole):
    """{vol}`volume:label` or {vol}`title <volume:label>`."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        volume, sep, label = self.target.partition(":")
        volumes = self.config.book_volumes
        if not sep or not label or volume not in volumes:
            known = ", ".join(sorted(volumes)) or "(book_volumes is empty)"
            logger.warning(
                f"{{vol}} expects `volume:label` with volume one of {known}; got {self.target!r}",
                location=(self.env.docname, self.lineno), type="vol", subtype="syntax",
            )
            return [nodes.inline(self.rawtext, self.rawtext, classes=["problematic"])], []
        node = vol_reference(self.rawtext, volume=volume.strip(), label=label.strip())
        if self.has_explicit_title:
            node["title"] = self.title
        self.set_source_info(node)
        INVENTORIES.note(self.env)
        return [node], []


def _site_root(app: Sphinx, docname: str) -> str:
    """Relative path from a written page to the site's root, e.g. '../' for dev/site.html."""
    return "../" * app.builder.get_target_uri(docname).count("/")


class ResolveVolumeReferences(SphinxPostTransform):
    default_priority = 10

    def run(self, **kwargs: Any) -> None:
        volumes: dict[str, Volume] = getattr(self.app, "book_volumes", {})
        first: dict[str, nodes.Node] = {}
        for node in list(self.document.findall(vol_reference)):
            new = self.resolve(node, volumes.get(node["volume"]))
            node.replace_self(new)
            for n in new:
                if "vol-unlinked" in n.get("classes", []) and node["volume"] not in first:
                    first[node["volume"]] = n
        for key, node in first.items():
            self.note_unlinked(node, volumes[key])

    def note_unlinked(self, node: nodes.Node, vol: Volume) -> None:
        """Once per page and volume, after the paragraph of its first reference: what the volume is, and that
        it is not published yet (so its references are plain text)."""
        block = node
        while block.parent is not None and not isinstance(block, (nodes.paragraph, nodes.title)):
            block = block.parent
        parent = block.parent
        if parent is None:
            return
        what = f"{vol.title}是{vol.about}。" if vol.about else f"{vol.title}是另一本书。"
        note = nodes.container(classes=["book-notice", "book-notice-na", "book-vol-note"])
        # the reader's words only: why the build could not link (no inventory yet, offline) is the log's business,
        # and so is what happens once it is published (each reference's tooltip says that)
        note += nodes.paragraph("", f"{what}它还没有上线。")
        parent.insert(parent.index(block) + 1, note)

    def resolve(self, node: vol_reference, vol: Volume | None) -> list[nodes.Node]:
        label = node["label"]
        if vol is None:  # the volume was removed from book_volumes after this page was read
            text = f"{node['volume']} 卷「{node.get('title') or label}」"
            logger.warning(f"{{vol}}: no volume {node['volume']!r} in book_volumes", location=node, type="vol", subtype="unknown")
            return [nodes.Text(text)]
        found = vol.items.get(label) if vol.items is not None else None
        text = f"{vol.title}「{node.get('title') or (found[1] if found else label)}」"
        if found is not None:
            url = vol.url
            if url and "://" not in url and not url.startswith("/"):
                url = _site_root(self.app, self.env.docname) + url
            ref = nodes.reference("", text, internal=False, refuri=posixpath.join(url, found[0]) if url else found[0])
            ref["classes"].append("vol-ref")
            return [ref]
        if vol.items is not None:
            logger.warning(
                f"{{vol}}: {vol.title}的目录（{vol.source}）里没有 {label!r}",
                location=node,
                type="vol",
                subtype="missing",
            )
        else:
            vol.unlinked += 1
        # Plain text, with a tooltip; the first one on the page is followed by a note (note_unlinked).
        from capture.sphinxext.reader import tip

        return [tip(text, f"{vol.title}还没有上线，上线以后这里会变成链接", ["vol-ref", "vol-unlinked"])]


def on_builder_inited(app: Sphinx) -> None:
    app.book_volumes = {}
    for key, spec in app.config.book_volumes.items():
        if not isinstance(spec, dict):
            logger.warning(f"book_volumes[{key!r}] must be a dict with title, url and inventory, not {spec!r}",
                           location=str(Path(app.confdir, "conf.py")), type="vol", subtype="config")
            spec = {}
        app.book_volumes[key] = load_volume(key, spec, str(app.confdir))


def inventories_state(app: Sphinx) -> dict:
    """What the pages saw of each volume: rewritten when an inventory changes, appears or disappears."""
    return {key: (vol.url, vol.source, vol.digest) for key, vol in getattr(app, "book_volumes", {}).items()}


INVENTORIES = Dependency("volume-inventories", inventories_state)


def on_build_finished(app: Sphinx, exception) -> None:
    for vol in getattr(app, "book_volumes", {}).values():
        if vol.items is None and vol.unlinked:
            logger.info(f"{{vol}}: {vol.title}的目录不可用（{vol.why}），{vol.unlinked} 处引用写成了纯文本")


def setup(app: Sphinx) -> dict[str, Any]:
    from capture.sphinxext.reader import setup_nodes

    setup_nodes(app)  # the tooltip of an unlinked reference
    app.add_config_value("book_volumes", {}, "env", types=[dict])
    app.add_role("vol", VolumeRole())
    app.add_post_transform(ResolveVolumeReferences)
    app.connect("builder-inited", on_builder_inited)
    INVENTORIES.connect(app)
    app.connect("build-finished", on_build_finished)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
