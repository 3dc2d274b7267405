#!/usr/bin/env bash
# Install the minimal Debian packages that `gaca report` needs to compile reports/report.pdf:
# latexmk + pdflatex (texlive-latex-base), booktabs/caption/xcolor (texlive-latex-recommended),
# Latin Modern fonts (fonts-lmodern, pulled by texlive-latex-base) and pdftoppm (poppler-utils) to
# render pages for inspection. No recommends: texlive-full would be several GB.
# Idempotent: does nothing when everything is already there. Needs root (or sudo).
set -euo pipefail

packages=(latexmk texlive-latex-base texlive-latex-recommended poppler-utils)

if command -v latexmk >/dev/null && command -v pdflatex >/dev/null && command -v pdftoppm >/dev/null \
  && kpsewhich booktabs.sty >/dev/null; then
  echo "LaTeX toolchain already installed: $(pdflatex --version | head -n 1)"
  exit 0
fi

# shellcheck source=scripts/apt-install.sh
. "$(dirname "$0")/apt-install.sh"
apt_install "${packages[@]}"
kpsewhich booktabs.sty >/dev/null || { echo "install-latex.sh: booktabs.sty not found after install" >&2; exit 1; }
echo "LaTeX toolchain installed: $(pdflatex --version | head -n 1)"
