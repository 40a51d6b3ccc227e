(* What OCaml makes of text, a line at a time, for ripple's readers:

     read_tool num    float_of_string (the bits of the double, in hex),
                      int_of_string, Int32.of_string and Int64.of_string,
                      or ERR where one fails
     read_tool sexp   Sexplib.Sexp.of_string (parsexp, as the workers read
                      text), printed by Sexp.to_string, or ERR and why *)
let () =
  let conv f = try f () with Failure _ -> "ERR" in
  let line l =
    match Sys.argv.(1) with
    | "num" ->
      Printf.sprintf "%s %s %s %s"
        (conv (fun () -> Printf.sprintf "%Lx" (Int64.bits_of_float (float_of_string l))))
        (conv (fun () -> string_of_int (int_of_string l)))
        (conv (fun () -> Int32.to_string (Int32.of_string l)))
        (conv (fun () -> Int64.to_string (Int64.of_string l)))
    | _ -> (
      match Sexplib.Sexp.of_string l with
      | s -> Sexplib.Sexp.to_string s
      | exception Sexplib.Sexp.Parse_error e -> "ERR " ^ e.err_msg)
  in
  try
    while true do
      print_endline (line (input_line stdin))
    done
  with End_of_file -> ()
