"""``report.tex``, which inputs every table and figure, and its compilation with latexmk."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("booktabs", "graphicx", "amsmath", "caption", "float")
"""Everything report.tex uses; scripts/install-latex.sh installs them (texlive-latex-recommended)."""
LATEXMK_TIMEOUT_S = 180

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"$<$",
    ">": r"$>$",
    "−": r"$-$",
    "±": r"$\pm$",
    "→": r"$\to$",
    "≥": r"$\geq$",
}


def escape(text: str) -> str:
    """Plain text (a run's env name, a reason) made safe to typeset."""
    # a hyphen before another would set an en or em dash: "--where" stays as typed
    return re.sub(r"-(?=-)", "-{}", "".join(_SPECIAL.get(char, char) for char in str(text)))


@dataclass(frozen=True)
class Figure:
    """A figure of the report: its file (without extension, relative to the report), name and caption."""

    stem: str
    name: str
    """As the paper calls it, e.g. ``Figure 2(c)``; printed in bold before the caption."""
    caption: str


def report_tex(
    title: str,
    summary: Sequence[str],
    skipped: Sequence[str],
    tables: Sequence[tuple[str, int]],
    figures: Sequence[Figure],
    claims: str | None,
) -> str:
    r"""The report document.

    ``summary``: LaTeX lines, the first a paragraph and the rest a list; ``skipped``: LaTeX lines,
    each a table or figure left out and why (a section of its own); ``tables``: (path to
    ``\input``, the paper's number for it); ``claims``: path of the claims table, if any. Paths are
    relative to the report.
    """
    lines = [
        r"\documentclass[10pt]{article}",
        r"\usepackage[margin=2cm]{geometry}",
        *(rf"\usepackage{{{package}}}" for package in PACKAGES),
        r"\captionsetup{font=small}",
        rf"\title{{{title}}}",
        r"\author{}",
        r"\date{\today}",
        r"\begin{document}",
        r"\maketitle",
        r"\section*{Data}",
        summary[0] if summary else "",
    ]
    if len(summary) > 1:
        lines += [
            r"\begin{itemize}",
            r"\setlength\itemsep{0pt}",
            *(rf"\item {line}" for line in summary[1:]),
            r"\end{itemize}",
        ]
    lines += [r"\section*{Left out}"]
    if skipped:
        lines += [
            r"\begin{itemize}",
            r"\setlength\itemsep{0pt}",
            *(rf"\item {line}" for line in skipped),
            r"\end{itemize}",
        ]
    else:
        lines.append("Every table and figure of the requested blocks is shown.")
    lines.append(r"\section*{Tables}")
    for path, number in tables:
        lines += [rf"\setcounter{{table}}{{{number - 1}}}", rf"\input{{{path}}}"]
    if claims:
        lines += [r"\section*{Claims}", rf"\input{{{claims}}}"]
    if figures:
        lines.append(r"\section*{Figures}")
    for figure in figures:
        lines += [
            r"\begin{figure}[H]",
            r"\centering",
            # natural size (the figures are drawn at print size), shrunk only if wider than the text
            rf"\resizebox{{\ifdim\width>\linewidth\linewidth\else\width\fi}}{{!}}{{\includegraphics{{{figure.stem}.pdf}}}}",
            rf"\caption*{{\textbf{{{figure.name}.}} {figure.caption}}}",
            r"\end{figure}",
        ]
    lines += [r"\end{document}", ""]
    return "\n".join(lines)


def latexmk_available() -> bool:
    return shutil.which("latexmk") is not None and shutil.which("pdflatex") is not None


def compile_pdf(tex: Path) -> Path:
    """Compile ``tex`` with latexmk + pdflatex next to it and return the PDF's path.

    Raises ``FileNotFoundError`` when no LaTeX engine is installed (``scripts/install-latex.sh``
    installs one) and ``RuntimeError`` with the end of the LaTeX log when compilation fails.
    Auxiliary files are removed after a successful build.
    """
    if not latexmk_available():
        raise FileNotFoundError("latexmk/pdflatex not found; install them with scripts/install-latex.sh")
    command = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-quiet", tex.name]
    done = subprocess.run(command, cwd=tex.parent, capture_output=True, text=True, timeout=LATEXMK_TIMEOUT_S)
    pdf = tex.with_suffix(".pdf")
    if done.returncode != 0 or not pdf.exists():
        log = tex.with_suffix(".log")
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else done.stdout[-3000:] + done.stderr[-3000:]
        raise RuntimeError(f"latexmk failed on {tex} (exit {done.returncode}); end of the log:\n{tail}")
    subprocess.run(["latexmk", "-c", tex.name], cwd=tex.parent, capture_output=True, timeout=LATEXMK_TIMEOUT_S)
    return pdf
