#!/bin/sh
# Build ripple_gen, ripple_read, ripple_walk, sexp_tool and read_tool into OUTDIR.
#
#   tests/interop/ocaml/build.sh OUTDIR
#
# Needs Debian's OCaml packages (see the top of ripple_wire.ml).  The sources
# are copied into OUTDIR and compiled there, because ocamlopt writes its
# .cmi/.cmx/.o next to the sources; the source folder stays clean.  Safe to
# run again on the same OUTDIR: everything is rebuilt from the fresh copies.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

if ! command -v ocamlfind >/dev/null 2>&1; then
    echo "build.sh: ocamlfind not found; install Debian's OCaml packages (see ripple_wire.ml)" >&2
    exit 1
fi

for f in ripple_wire.ml ripple_frame.ml gen_schemas.ml ripple_gen.ml ripple_read.ml ripple_walk.ml sexp_tool.ml read_tool.ml; do
    cp "$src/$f" "$out/$f"
done

cd "$out"
rm -f ./*.cmi ./*.cmx ./*.o ripple_gen ripple_read ripple_walk sexp_tool read_tool

# No flambda in Debian's compiler, so no -O3; -unsafe drops bounds checks in
# the hot loops (CRC, generation), -inline helps the non-flambda inliner.
ocamlopt="ocamlfind ocamlopt -package bin_prot,sexplib,ppx_bin_prot,ppx_sexp_conv,unix -unsafe -inline 200"
# Our own modules: most warnings on; non-exhaustive (8) and unused (11) match
# cases are errors, since either would mean a schema or message type fell
# through.  ripple_wire.ml is the protocol's verbatim copy: default warnings.
ours="-w +a-4-9-40-41-42-44-45-70 -warn-error +8+11"

$ocamlopt -c ripple_wire.ml
for m in ripple_frame gen_schemas ripple_gen ripple_read ripple_walk; do
    $ocamlopt $ours -c $m.ml
done
common="ripple_wire.cmx ripple_frame.cmx gen_schemas.cmx"
for exe in ripple_gen ripple_read ripple_walk; do
    $ocamlopt -linkpkg $common $exe.cmx -o $exe
    if [ ! -x "$exe" ]; then
        echo "build.sh: $exe was not built" >&2
        exit 1
    fi
done
# sexp_tool: sexplib's own printers on any s-expression (checks ripple's).
$ocamlopt $ours -c sexp_tool.ml
$ocamlopt -linkpkg sexp_tool.cmx -o sexp_tool
# read_tool: OCaml's number conversions and Sexp.of_string (check ripple's readers).
$ocamlopt $ours -c read_tool.ml
$ocamlopt -linkpkg read_tool.cmx -o read_tool
echo "built ripple_gen ripple_read ripple_walk sexp_tool read_tool in $out"
