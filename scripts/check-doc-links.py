"""Checks that the documentation a package ships is whole: every relative link of every Markdown
page under ROOT (the unpacked archive's top directory, or /usr/share/doc/cks-iso of an installed
RPM or .deb) names a file or directory that is there, inside ROOT. With --docs-from REPO, also
that ROOT/docs holds every file of REPO's docs/, byte for byte.

The repository's own links are checked by tests/it/docs/links.rs (anchors too); this checks what
a package keeps of them. Markdown is read with markdown-it-py (CommonMark, plus GitHub's tables),
so links in tables count and text in code spans and fenced blocks does not.

Usage: python scripts/check-doc-links.py ROOT [--docs-from REPO]; prints one line per problem and
exits 1, or a summary and exits 0.
"""

import argparse
import os
import sys
import urllib.parse

from markdown_it import MarkdownIt


def destinations(text):
    """The link and image destinations of a Markdown page, in order."""
    parser = MarkdownIt("commonmark").enable("table")
    out = []
    for block in parser.parse(text):
        for token in block.children or []:
            if token.type == "link_open":
                out.append(token.attrGet("href"))
            elif token.type == "image":
                out.append(token.attrGet("src"))
    return out


def is_relative(dest):
    """A link into the shipped tree: not a URL (scheme), not an anchor of the same page."""
    return dest and not dest.startswith("#") and not urllib.parse.urlsplit(dest).scheme


def dead_links(root):
    """(page, link, why) for each relative link under root that does not resolve inside it."""
    pages, links, dead = 0, 0, []
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".md")):
            page = os.path.join(top, name)
            pages += 1
            with open(page, encoding="utf-8") as f:
                text = f.read()
            for dest in filter(is_relative, destinations(text)):
                links += 1
                path = urllib.parse.unquote(urllib.parse.urlsplit(dest).path)
                target = os.path.normpath(os.path.join(top, path))
                if os.path.relpath(target, root).startswith(".."):
                    dead.append((page, dest, f"{target} is outside {root}"))
                elif not os.path.exists(target):
                    dead.append((page, dest, f"expected {target}, found nothing"))
    return pages, links, dead


def missing_docs(root, repo):
    """The files of repo/docs that root/docs lacks or holds with other bytes."""
    out = []
    docs = os.path.join(repo, "docs")
    for top, _, files in os.walk(docs):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(top, name), repo)
            shipped = os.path.join(root, rel)
            if not os.path.isfile(shipped):
                out.append(f"{rel}: expected {shipped}, found nothing")
            else:
                with open(os.path.join(repo, rel), "rb") as a, open(shipped, "rb") as b:
                    if a.read() != b.read():
                        out.append(f"{rel}: {shipped} differs from the repository's")
    return out


def main():
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("root")
    args.add_argument("--docs-from", metavar="REPO")
    opts = args.parse_args()
    root = os.path.abspath(opts.root)
    if not os.path.isfile(os.path.join(root, "README.md")):
        print(f"{root}: expected the shipped README.md, found none", file=sys.stderr)
        return 1
    pages, links, dead = dead_links(root)
    problems = [f"{page}: link {dest}: {why}" for page, dest, why in dead]
    if opts.docs_from:
        problems += missing_docs(root, opts.docs_from)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("hint: ship the file (scripts/dist.sh, rpm/cks-iso.spec.in, Cargo.toml's deb assets) "
              "or make the page name it without a link", file=sys.stderr)
        return 1
    print(f"{pages} pages, {links} relative links, every one resolves in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
