"""Prints what a sandbox image offers, as JSON: run once at build time (finish.sh),
written to /opt/codeinterp/runtimes.json, served by GET /v1/runtimes.

    python3 manifest.py slim|full

{"image": "slim"|"full",
 "languages": [{"name": "python", "version": "3.11.2"}, ...],
 "packages":  [{"name", "version", "kind": "python"|"node"|"tool"|"font", ...}, ...],
 "missing":   [{"name", "kind", "why"}, ...]}

The file's path and its top-level keys are a contract with the API. Everything is
found by asking what is installed (importlib.metadata, npm, each tool's --version),
never from a list of what the Dockerfile meant to install; "missing" is the
reference toolbox (REFERENCE, the seed product's preinstalled set) less what was
found, so an image built with EXTRA_PIP_PACKAGES and EXTRA_NPM_PACKAGES lists
nothing missing.
"""

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys

PIP_WHY = "not packaged by Debian bookworm; set EXTRA_PIP_PACKAGES on a machine that reaches PyPI"
NPM_WHY = "not packaged by Debian bookworm; set EXTRA_NPM_PACKAGES on a machine that reaches the npm registry"
SLIM_WHY = "left out of the slim image: use the full image"

# The reference toolbox: (kind, name, why it may be absent). Python names are PyPI
# distribution names; tools are the names TOOLS gives them.
REFERENCE = [
    *[("python", n, None) for n in (
        "pip", "numpy", "pandas", "scipy", "sympy", "scikit-learn", "statsmodels",
        "matplotlib", "seaborn", "openpyxl", "XlsxWriter", "python-docx", "reportlab",
        "pypdf", "PyMuPDF", "Pillow", "CairoSVG", "requests", "beautifulsoup4", "lxml")],
    *[("python", n, PIP_WHY) for n in (
        "python-pptx", "fpdf2", "pdfplumber", "pdf2image", "pytesseract", "markitdown")],
    *[("node", n, NPM_WHY) for n in ("docx", "pptxgenjs")],
    *[("tool", n, None) for n in ("bash", "pandoc", "tesseract", "qpdf", "poppler")],
    *[("tool", n, SLIM_WHY) for n in ("node", "npm", "libreoffice")],
    *[("tesseract-language", n, None) for n in ("eng", "chi_sim", "chi_tra", "jpn", "kor")],
]

# Tools: name -> (command, argument that prints the version).
TOOLS = {
    "bash": ("bash", "--version"),
    "node": ("node", "--version"),
    "npm": ("npm", "--version"),
    "libreoffice": ("soffice", "--version"),
    "pandoc": ("pandoc", "--version"),
    "tesseract": ("tesseract", "--version"),
    "qpdf": ("qpdf", "--version"),
    "poppler": ("pdftotext", "-v"),
}

VERSION = re.compile(r"\d+(?:\.\d+)+")


def output(*argv):
    """What a command prints on stdout and stderr; "" if it cannot run."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout + p.stderr


def version_of(text):
    m = VERSION.search(text)
    return m.group(0) if m else ""


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def python_packages():
    """Every installed distribution, the one import finds first when there are two
    (pip's in /usr/local before Debian's)."""
    seen = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in seen:
            seen[canonical(name)] = {"name": name, "version": dist.version, "kind": "python"}
    return sorted(seen.values(), key=lambda p: canonical(p["name"]))


def node_packages():
    """The global packages npm installed (EXTRA_NPM_PACKAGES)."""
    if not shutil.which("npm"):
        return []
    try:
        deps = json.loads(output("npm", "ls", "-g", "--depth=0", "--json") or "{}").get("dependencies", {})
    except ValueError:
        return []
    return [{"name": n, "version": d.get("version", ""), "kind": "node"}
            for n, d in sorted(deps.items()) if n != "npm"]


def tools():
    found = []
    for name, (cmd, arg) in TOOLS.items():
        if shutil.which(cmd):
            tool = {"name": name, "version": version_of(output(cmd, arg)), "kind": "tool", "command": cmd}
            if name == "tesseract":
                tool["languages"] = tesseract_languages()
            found.append(tool)
    return found


def tesseract_languages():
    lines = output("tesseract", "--list-langs").splitlines()
    return sorted(ln.strip() for ln in lines[1:] if ln.strip() and ln.strip() != "osd")


def fonts():
    """The CJK font families matplotlib (and LibreOffice, through fontconfig) can use."""
    from matplotlib import font_manager
    names = sorted({f.name for f in font_manager.fontManager.ttflist if "CJK" in f.name})
    return [{"name": n, "version": "", "kind": "font"} for n in names]


def languages(tools_found):
    by_name = {t["name"]: t["version"] for t in tools_found}
    langs = [{"name": "python", "version": "%d.%d.%d" % sys.version_info[:3]}]
    if "bash" in by_name:
        langs.append({"name": "bash", "version": by_name["bash"]})
    if "node" in by_name:
        langs.append({"name": "javascript", "version": by_name["node"], "runtime": "node"})
    return langs


def missing(image, packages):
    have = {(p["kind"], canonical(p["name"])) for p in packages}
    for p in packages:
        for lang in p.get("languages", []):
            have.add(("tesseract-language", canonical(lang)))
    out = []
    for kind, name, why in REFERENCE:
        if (kind, canonical(name)) in have:
            continue
        if image == "slim" and (why == SLIM_WHY or kind == "node"):
            why = SLIM_WHY
        out.append({"name": name, "kind": kind, "why": why or "not installed"})
    return out


def main():
    image = sys.argv[1] if len(sys.argv) > 1 else "full"
    found_tools = tools()
    packages = python_packages() + node_packages() + found_tools + fonts()
    manifest = {
        "image": image,
        "languages": languages(found_tools),
        "packages": packages,
        "missing": missing(image, packages),
    }
    json.dump(manifest, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
