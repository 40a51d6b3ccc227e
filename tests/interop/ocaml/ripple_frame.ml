(* The envelope (README section 1) and CRC-32C, shared by ripple_gen,
   ripple_read and ripple_walk.  Written from the README, not from the Python
   code, so that the two sides are independent implementations. *)

let magic = "RIPP"
let protocol_version = 1
let header_len = 59 (* bytes before the payload *)
let overhead = 63 (* header + CRC *)
let max_payload = 16 * 1024 * 1024 (* the usual receiver maximum *)

(* ---------- CRC-32C: the table method, one byte at a time ----------
   Castagnoli, reflected polynomial 0x82F63B78, init and final xor
   0xFFFFFFFF.  OCaml ints are 63-bit, so 32-bit values fit unsigned. *)

let crc_table =
  Array.init 256 (fun n ->
      let c = ref n in
      for _ = 1 to 8 do
        c := if !c land 1 = 1 then 0x82F63B78 lxor (!c lsr 1) else !c lsr 1
      done;
      !c)

let crc32c_update crc s pos len =
  let c = ref crc in
  for i = pos to pos + len - 1 do
    c := Array.unsafe_get crc_table ((!c lxor Char.code (String.unsafe_get s i)) land 0xff)
         lxor (!c lsr 8)
  done;
  !c

let crc32c s pos len = crc32c_update 0xFFFFFFFF s pos len lxor 0xFFFFFFFF

(* ---------- bin_prot to and from OCaml strings ---------- *)

(* One growable scratch buffer: the generator writes millions of values. *)
let scratch = ref (Bin_prot.Common.create_buf 65536)

let ensure_scratch n =
  if Bin_prot.Common.buf_len !scratch < n
  then scratch := Bin_prot.Common.create_buf (max n (2 * Bin_prot.Common.buf_len !scratch))

let to_string (w : 'a Bin_prot.Type_class.writer) v =
  let n = w.size v in
  ensure_scratch n;
  let stop = w.write !scratch ~pos:0 v in
  assert (stop = n);
  let b = Bytes.create n in
  Bin_prot.Common.blit_buf_bytes !scratch b ~len:n;
  Bytes.unsafe_to_string b

exception Decode_error of string

(* Read a whole string as one value: leftover bytes are an error, because
   an encoder that writes extra bytes is as wrong as one that writes too few. *)
let of_string (r : 'a Bin_prot.Type_class.reader) s =
  let n = String.length s in
  ensure_scratch n;
  Bin_prot.Common.blit_string_buf s !scratch ~len:n;
  let pos_ref = ref 0 in
  let v =
    try r.read !scratch ~pos_ref with
    | e -> raise (Decode_error (Printexc.to_string e))
  in
  if !pos_ref <> n
  then raise (Decode_error (Printf.sprintf "%d trailing byte(s) after the value" (n - !pos_ref)));
  v

(* ---------- Envelope ---------- *)

let envelope ~tag ~seq ~time_ns ~fingerprint ~payload =
  let flen = String.length fingerprint in
  if flen > 32 then invalid_arg ("fingerprint longer than 32 bytes: " ^ fingerprint);
  let n = String.length payload in
  let b = Bytes.make (overhead + n) '\000' in
  Bytes.blit_string magic 0 b 0 4;
  Bytes.set_uint8 b 4 protocol_version;
  Bytes.set_uint8 b 5 tag;
  Bytes.set_uint8 b 6 0 (* flags *);
  Bytes.set_int64_le b 7 seq;
  Bytes.set_int64_le b 15 time_ns;
  Bytes.blit_string fingerprint 0 b 23 flen (* the rest stays zero *);
  Bytes.set_int32_le b 55 (Int32.of_int n);
  Bytes.blit_string payload 0 b header_len n;
  let crc = crc32c (Bytes.unsafe_to_string b) 0 (header_len + n) in
  Bytes.set_int32_le b (header_len + n) (Int32.of_int crc);
  Bytes.unsafe_to_string b

type header =
  { offset : int (* of the envelope in the stream *)
  ; tag : int
  ; flags : int
  ; seq : int64
  ; time_ns : int64
  ; fingerprint : string (* trailing NULs removed *)
  ; payload_pos : int
  ; payload_len : int
  }

exception Bad_envelope of string

let bad offset fmt = Printf.ksprintf (fun m -> raise (Bad_envelope (Printf.sprintf "envelope at byte %d: %s" offset m))) fmt

let strip_nuls s =
  let n = ref (String.length s) in
  while !n > 0 && s.[!n - 1] = '\000' do decr n done;
  String.sub s 0 !n

(* Check the envelope at [offset] in the order README section 1 gives:
   magic, version, payload length, CRC. *)
let read_header s offset =
  let avail = String.length s - offset in
  if avail < header_len then bad offset "truncated header (%d bytes left)" avail;
  if String.sub s offset 4 <> magic then bad offset "bad magic %S" (String.sub s offset 4);
  let version = Char.code s.[offset + 4] in
  if version <> protocol_version then bad offset "unsupported protocol version %d" version;
  let n = Int32.to_int (String.get_int32_le s (offset + 55)) in
  if n < 0 || n > max_payload then bad offset "payload length %d out of range" n;
  if avail < overhead + n then bad offset "truncated: needs %d bytes, %d left" (overhead + n) avail;
  let expected = crc32c s offset (header_len + n) in
  let got = Int32.to_int (String.get_int32_le s (offset + header_len + n)) land 0xFFFFFFFF in
  if got <> expected then bad offset "CRC mismatch: stored %08x, computed %08x" got expected;
  { offset
  ; tag = Char.code s.[offset + 5]
  ; flags = Char.code s.[offset + 6]
  ; seq = String.get_int64_le s (offset + 7)
  ; time_ns = String.get_int64_le s (offset + 15)
  ; fingerprint = strip_nuls (String.sub s (offset + 23) 32)
  ; payload_pos = offset + header_len
  ; payload_len = n
  }

let read_file path =
  let ic = open_in_bin path in
  Fun.protect
    ~finally:(fun () -> close_in ic)
    (fun () -> really_input_string ic (in_channel_length ic))
