# Sourced by .ci/setup-ggml and .ci/setup-llama: the one pin of the llama-cpp-python source
# distribution on PyPI (a package registry), which vendors llama.cpp whole (ggml, libllama,
# convert_hf_to_gguf.py and its gguf-py). Both builds unpack the same verified tarball, so it is
# downloaded once and ggml, libllama and the converter all come from the same llama.cpp.
sdist_version="0.3.36"
sdist_sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
sdist_url="https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$sdist_version.tar.gz"

# sdist_tarball DIR: the verified tarball in DIR (downloaded only if missing or corrupt); prints
# its path. The caller's name for its messages is $0.
sdist_tarball() {
  local tarball="$1/llama_cpp_python-$sdist_version.tar.gz"
  mkdir -p "$1"
  if ! echo "$sdist_sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
    curl --fail --silent --show-error --location --retry 3 "$sdist_url" -o "$tarball" >&2
    echo "$sdist_sha256  $tarball" | sha256sum -c --status || { echo "$(basename "$0"): checksum mismatch for $sdist_url" >&2; return 1; }
  fi
  echo "$tarball"
}
