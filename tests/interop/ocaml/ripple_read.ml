(* ripple_read: decode a Ripple stream with the real OCaml types and print
   each message's canonical line, as ripple_gen -sexp writes it.

     ripple_read [-quiet] [-o FILE] STREAM

   Two uses: the interop tests check that OCaml reads back what
   `ripple encode` wrote; the benchmarks use it as the anchor for
   "typed bin_prot decode + sexplib print".

   Strict on purpose: a bad envelope (magic, version, length, CRC), a payload
   or nested key/delta that does not decode to exactly its length, an unknown
   message tag, or a Handshake declaring a schema that differs from the
   OCaml type of the same fingerprint: exit 1 with a message on stderr.

   A Delta decodes typed when a Handshake earlier in the stream declared its
   fingerprint (README section 4); otherwise it prints as the raw delta_msg. *)

open Ripple_wire
module Sexp = Sexplib.Sexp
module F = Ripple_frame
module G = Gen_schemas

let fail fmt = Printf.ksprintf (fun m -> prerr_endline ("ripple_read: " ^ m); exit 1) fmt

(* What a Handshake declared, by fingerprint. *)
type declared =
  | Typed of (delta_msg -> Sexp.t)
  | No_ocaml_type (* declared, but not one of gen_schemas.ml: cannot decode it typed *)

let declared : (string, declared) Hashtbl.t = Hashtbl.create 16

let typed_decoder (e : G.entry) =
  let (module M) = e.impl in
  fun (dm : delta_msg) ->
    let key = F.of_string M.bin_reader_key dm.key in
    let delta = F.of_string M.bin_reader_delta dm.delta_bytes in
    sexp_of_delta_view M.sexp_of_key M.sexp_of_delta
      { source_output = dm.source_output
      ; key
      ; delta
      ; sequence_no = dm.sequence_no
      ; watermark_ns = dm.watermark_ns
      }

let declare (h : handshake) =
  List.iter
    (fun (_output, (s : Schema.t)) ->
      let fp = Schema.fingerprint s in
      match G.find_by_fingerprint fp with
      | Some e when e.schema = s -> Hashtbl.replace declared fp (Typed (typed_decoder e))
      | Some _ -> fail "a Handshake declares %s with a schema that differs from its OCaml type" fp
      | None ->
        (* fine until a Delta uses it *)
        Hashtbl.replace declared fp No_ocaml_type)
    h.output_schemas

let payload s (h : F.header) reader =
  F.of_string reader (String.sub s h.payload_pos h.payload_len)

let view s (h : F.header) : Sexp.t message_view =
  match h.tag with
  | 0 ->
    let hs = payload s h bin_reader_handshake in
    declare hs;
    Handshake hs
  | 1 ->
    let dm = payload s h bin_reader_delta_msg in
    (match Hashtbl.find_opt declared h.fingerprint with
     | Some (Typed decode) -> Delta (decode dm)
     | Some No_ocaml_type ->
       fail "envelope at byte %d: a Delta of %s, declared, but it has no OCaml type here" h.offset
         h.fingerprint
     | None -> Delta (sexp_of_delta_msg dm))
  | 2 -> Checkpoint_request (payload s h bin_reader_checkpoint_request)
  | 3 -> Checkpoint_ack (payload s h bin_reader_checkpoint_ack)
  | 4 -> Heartbeat (payload s h bin_reader_heartbeat)
  | 5 -> Schema_negotiation (payload s h bin_reader_schema_negotiation)
  | t -> fail "envelope at byte %d: unknown message type %d" h.offset t

let () =
  let quiet = ref false in
  let out = ref "" in
  let input = ref "" in
  let spec =
    [ "-quiet", Arg.Set quiet, " decode and build every line, print nothing (benchmarks)"
    ; "-o", Arg.Set_string out, "FILE  write the lines to FILE instead of stdout"
    ]
  in
  let usage = "ripple_read [-quiet] [-o FILE] STREAM" in
  Arg.parse spec
    (fun a -> if !input = "" then input := a else raise (Arg.Bad ("unexpected argument " ^ a)))
    usage;
  if !input = "" then (Arg.usage spec usage; exit 2);
  let s = try F.read_file !input with Sys_error m -> fail "%s" m in
  let oc = if !out = "" then stdout else open_out_bin !out in
  set_binary_mode_out oc true;
  let pos = ref 0 in
  let len = String.length s in
  while !pos < len do
    let h = try F.read_header s !pos with F.Bad_envelope m -> fail "%s" m in
    let msg =
      try view s h with
      | F.Decode_error m -> fail "envelope at byte %d (type %d): payload: %s" h.offset h.tag m
    in
    let line =
      Sexp.to_string
        (sexp_of_envelope_view Fun.id { seq = h.seq; time_ns = h.time_ns; schema = h.fingerprint; msg })
    in
    if not !quiet
    then (
      output_string oc line;
      output_char oc '\n');
    pos := !pos + F.overhead + h.payload_len
  done;
  close_out oc
