(* Reads s-expressions from stdin; prints each as to_string_hum, then a line
   with "---", then its to_string (machine form). Used to check ripple's
   printers against sexplib's. *)
let () =
  let lexbuf = Lexing.from_channel stdin in
  let rec loop () =
    match Sexplib.Sexp.scan_sexp_opt lexbuf with
    | None -> ()
    | Some s ->
      print_string (Sexplib.Sexp.to_string_hum s); print_char '\n';
      print_string (Sexplib.Sexp.to_string s); print_char '\n';
      loop ()
  in
  loop ()
