(* ripple_walk: the benchmark anchor for "frame + CRC, no payload decode".

     ripple_walk STREAM
     -> messages=N bytes=B seconds=S

   Reads the whole file into memory, then walks every envelope checking
   magic, version, length and CRC-32C, the CRC by the table method one byte
   at a time, as the Ripple docs show it (Ripple_frame.crc32c).  S is wall
   time for read + walk, so it compares with a CLI that does the same. *)

module F = Ripple_frame

let () =
  let input = ref "" in
  let usage = "ripple_walk STREAM" in
  Arg.parse [] (fun a -> if !input = "" then input := a else raise (Arg.Bad ("unexpected argument " ^ a))) usage;
  if !input = "" then (Arg.usage [] usage; exit 2);
  let t0 = Unix.gettimeofday () in
  let s =
    try F.read_file !input with
    | Sys_error m -> prerr_endline ("ripple_walk: " ^ m); exit 1
  in
  let len = String.length s in
  let pos = ref 0 in
  let messages = ref 0 in
  while !pos < len do
    let h =
      try F.read_header s !pos with
      | F.Bad_envelope m -> prerr_endline ("ripple_walk: " ^ m); exit 1
    in
    incr messages;
    pos := !pos + F.overhead + h.payload_len
  done;
  let t1 = Unix.gettimeofday () in
  Printf.printf "messages=%d bytes=%d seconds=%.6f\n" !messages len (t1 -. t0)
