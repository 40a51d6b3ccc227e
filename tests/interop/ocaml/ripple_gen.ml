(* ripple_gen: writes Ripple streams with the real OCaml types, and the
   text that sexplib prints for them, for the interop tests and benchmarks.

     ripple_gen -profile interop|demo|bench -seed N -count N
                [-bin FILE] [-sexp FILE] [-hum FILE] [-schemas DIR]
     ripple_gen -selftest

   -bin      envelopes back to back (README section 1)
   -sexp     one line per message: Sexp.to_string (sexp_of_envelope_view ..)
   -hum      per message: Sexp.to_string_hum of the same sexp, then a newline
   -schemas  one file per declared schema: NAME_vVERSION.sexp, to_string_hum
   -count    total number of messages, the Handshake included

   The output is a pure function of (profile, seed, count): the PRNG is
   SplitMix64, implemented here, because Stdlib.Random changed algorithm in
   OCaml 5 and the bundled example must be reproducible with any OCaml.
   For the same reason every random draw is sequenced with [let]: OCaml
   leaves the evaluation order of arguments and record fields unspecified. *)

open Ripple_wire
module Sexp = Sexplib.Sexp
module F = Ripple_frame
module G = Gen_schemas

type profile =
  | Interop (* adversarial values everywhere *)
  | Demo (* a few hundred realistic messages, for examples/ *)
  | Bench (* realistic values, fast, for -count 1000000 *)

(* ---------- PRNG: SplitMix64 ---------- *)

module Rng = struct
  type t = { mutable s : int64 }

  let make seed = { s = Int64.of_int seed }

  let next64 t =
    t.s <- Int64.add t.s 0x9E3779B97F4A7C15L;
    let z = t.s in
    let z = Int64.mul (Int64.logxor z (Int64.shift_right_logical z 30)) 0xBF58476D1CE4E5B9L in
    let z = Int64.mul (Int64.logxor z (Int64.shift_right_logical z 27)) 0x94D049BB133111EBL in
    Int64.logxor z (Int64.shift_right_logical z 31)

  (* 62 random bits, non-negative on every platform with 63-bit ints *)
  let bits t = Int64.to_int (Int64.shift_right_logical (next64 t) 2)
  let int t n = if n <= 0 then invalid_arg "Rng.int" else bits t mod n
  let range t lo hi = lo + int t (hi - lo + 1)
  let bool t = int t 2 = 0

  (* [percent t p] is true with probability p% *)
  let percent t p = int t 1_000_000 < int_of_float (p *. 10_000.)
  let unit_float t = Int64.to_float (Int64.shift_right_logical (next64 t) 11) *. 0x1p-53
  let pick t a = a.(int t (Array.length a))

  (* [weighted t [| w1, x1; ... |]]: x_i with probability w_i / sum w *)
  let weighted t a =
    let total = Array.fold_left (fun acc (w, _) -> acc + w) 0 a in
    let x = ref (int t total) in
    let result = ref None in
    Array.iter
      (fun (w, v) ->
        if !result = None then if !x < w then result := Some v else x := !x - w)
      a;
    Option.get !result
end

(* [List.init] switches algorithm past 10_000 elements; this one is always
   in order, so the draws are too. *)
let list_init n f =
  let rec go i acc = if i = n then List.rev acc else go (i + 1) (f () :: acc) in
  go 0 []

(* ---------- Adversarial values (profile interop) ---------- *)

module Adv = struct
  (* List nesting depth: only an outermost list may be long, so that a long
     list of long lists cannot blow a stream up. *)
  let depth = ref 0

  (* Every bin_prot int size boundary, and the 63-bit extremes. *)
  let int_specials =
    [| 0; 1; -1; 2; 127; 128; -127; -128; -129; 255; 256; 32767; 32768; -32767; -32768
     ; -32769; 65535; 65536; 0x7fffffff; 0x80000000; -0x80000000; -0x80000001
     ; 0xffffffff; 0x100000000; 1 lsl 53; (1 lsl 53) + 1; 1 lsl 61; max_int; min_int
     ; max_int - 1; min_int + 1
    |]

  let int r =
    match Rng.int r 10 with
    | 0 | 1 | 2 | 3 -> Rng.pick r int_specials
    | 4 | 5 | 6 -> Rng.range r (-1000) 1000
    | _ ->
      (* an arithmetic shift of 64 random bits by 1..63: every magnitude *)
      let shift = Rng.range r 1 63 in
      Int64.to_int (Int64.shift_right (Rng.next64 r) shift)

  let int32_specials =
    [| 0l; 1l; -1l; 127l; 128l; -128l; -129l; 255l; 256l; 32767l; 32768l; -32768l; -32769l
     ; 65535l; 65536l; Int32.max_int; Int32.min_int; Int32.pred Int32.max_int
     ; Int32.succ Int32.min_int
    |]

  let int32 r =
    match Rng.int r 10 with
    | 0 | 1 | 2 | 3 -> Rng.pick r int32_specials
    | 4 | 5 | 6 -> Int32.of_int (Rng.range r (-1000) 1000)
    | _ ->
      let shift = Rng.int r 32 in
      Int32.shift_right (Int64.to_int32 (Rng.next64 r)) shift

  let int64_specials =
    [| 0L; 1L; -1L; 127L; 128L; -128L; -129L; 32767L; 32768L; -32768L; -32769L; 65535L
     ; 65536L; 0x7fffffffL; 0x80000000L; -0x80000000L; -0x80000001L; 0xffffffffL
     ; 0x100000000L; 0x3fffffffffffffffL (* 63-bit max_int *); -0x4000000000000000L
     ; 0x4000000000000000L (* past a 63-bit int *); -0x4000000000000001L; Int64.max_int
     ; Int64.min_int; Int64.pred Int64.max_int; Int64.succ Int64.min_int
     ; 1700000000000000000L
    |]

  let int64 r =
    match Rng.int r 10 with
    | 0 | 1 | 2 | 3 -> Rng.pick r int64_specials
    | 4 | 5 | 6 -> Int64.of_int (Rng.range r (-1000) 1000)
    | _ ->
      let shift = Rng.int r 64 in
      Int64.shift_right (Rng.next64 r) shift

  (* The only NaNs in a stream are the ones that survive the canonical text:
     sexplib prints any NaN as NAN or -NAN, and OCaml's own [float_of_sexp]
     reads those back as strtod's quiet NaNs, 0x7FF8... and 0xFFF8...  A
     NaN with another payload cannot round-trip through text, in OCaml or
     in ripple, so the interop streams use exactly these (fixed here rather
     than taken from [Float.nan], whose bits changed in OCaml 5.1). *)
  let nan_pos = Int64.float_of_bits 0x7FF8000000000000L
  let nan_neg = Int64.float_of_bits 0xFFF8000000000000L

  let float_specials =
    [| nan_pos; nan_neg; infinity; neg_infinity; 0.; -0.; 0.1; 0.2; 0.1 +. 0.2; 1e20; 1e21
     ; 1e22; 1e-7; 1e-5; 1e-4; 0.001; 1.; -1.; 0.5; 2.5; 100.; 101.25; 1e15; 1e16; 1e17
     ; 123456789012345678.; 9007199254740993. (* rounds to 2^53 *); 4503599627370497.
     ; 1e100; -1e-300; 1. /. 3.; 2. /. 3.; epsilon_float; 5e-324 (* smallest subnormal *)
     ; Int64.float_of_bits 0x000FFFFFFFFFFFFFL (* largest subnormal *)
     ; 1e-320; min_float (* smallest normal *); max_float; -.max_float; 1.7976931348623155e308
     ; 299792458.; 6.02214076e23; -273.15; 3.14159265358979
    |]

  let float r =
    match Rng.int r 10 with
    | 0 | 1 | 2 | 3 -> Rng.pick r float_specials
    | 4 | 5 | 6 ->
      (* decimal-looking: both the %.15G and the %.17G paths *)
      let m = Rng.range r (-10_000_000) 10_000_000 in
      let k = Rng.int r 9 in
      float_of_int m /. (10. ** float_of_int k)
    | _ ->
      (* a random bit pattern, never a NaN (those are only the two above) *)
      let rec go () =
        let f = Int64.float_of_bits (Rng.next64 r) in
        if Float.is_nan f then go () else f
      in
      go ()

  let bool r = Rng.bool r

  let all_bytes = String.init 256 Char.chr

  (* Everything sexplib's quoting and escaping rules single out, and the
     multi-line string layout of to_string_hum. *)
  let string_specials =
    [| ""; " "; "  "; "a b"; "("; ")"; "()"; "(a)"; "a(b"; "\""; "\"\""; "a\"b"; "\\"
     ; "\\\\"; "x\\"; "\\n"; ";"; "a;b"; ";; comment"; "#"; "|"; "#|"; "|#"; "a#|b"; "x|#"
     ; "#|x|#"; "#;"; "##"; "||"; "|a#"; "\n"; "\t"; "\r"; "\b"; "\r\n"; "\012"; "\011"
     ; "a\nb"; "line1\nline2\nline3"; "trailing\n"; "\n\nleading"; "a\n\nb"; "a\n b"
     ; "a\n\n"; "tab\there"; "  indented\n  block\n"; "\\\n"; "\"\n\""; "\000"
     ; "nul\000inside"; "\127"; "\128"; "\255"; "\001\002\003"; "caf\xc3\xa9"
     ; "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"; "emoji \xf0\x9f\x8e\x89"; "\xff\xfe"; "NAN"
     ; "-NAN"; "INF"; "-0"; "1E+20"; "nil"; "true"; "false"; "Set"; "Remove"; "vwap/v2"
     ; "ripple.heartbeat/v1"; "ends with space "; " starts with space"
     ; "~!@$%^&*-_=+[]{}:'<>,.?/`"; "back\\slash\nnewline"; "\t\n\r\b\012\011"; all_bytes
    |]

  let printable r = Char.chr (Rng.range r 32 126)
  let ident_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-:"

  let utf8_pool =
    [| "\xc3\xa9"; "\xc3\xbc"; "\xce\xbb"; "\xd0\x96"; "\xe2\x82\xac"; "\xe6\x97\xa5"
     ; "\xf0\x9f\x8e\x89"; "\xf0\x9f\x98\x80"; "a"; " "; "\n"
    |]

  let string_of r n f =
    let b = Buffer.create n in
    for _ = 1 to n do
      Buffer.add_char b (f r)
    done;
    Buffer.contents b

  (* Strings past the two-byte Nat0 length are rare draws; [force_long]
     makes the next [n] strings such strings, so every stream has some. *)
  let force_long = ref 0

  let long_string r =
    let n = Rng.pick r [| 65535; 65536; 70000 |] in
    string_of r n (fun r -> if Rng.int r 8 = 0 then Char.chr (Rng.int r 256) else printable r)

  let string r =
    let k = Rng.int r 1000 in
    if !force_long > 0
    then (
      decr force_long;
      long_string r)
    else if k < 250
    then Rng.pick r string_specials
    else if k < 500
    then string_of r (Rng.range r 1 20) printable
    else if k < 650
    then string_of r (Rng.range r 1 12) (fun r -> ident_chars.[Rng.int r (String.length ident_chars)])
    else if k < 800
    then string_of r (Rng.int r 21) (fun r -> Char.chr (Rng.int r 256))
    else if k < 900
    then (
      let n = Rng.range r 1 10 in
      String.concat "" (list_init n (fun () -> Rng.pick r utf8_pool)))
    else if k < 999
    then (
      (* past the one-byte Nat0 length, with the odd newline *)
      let n = Rng.pick r [| 127; 128; 129; 200; 255; 256; 400 |] in
      string_of r n (fun r -> if Rng.int r 40 = 0 then '\n' else printable r))
    else if Rng.int r 10 = 0
    then long_string r (* rarely: about 1 in 10_000 strings *)
    else string_of r (Rng.range r 1000 3000) printable

  let list g r =
    let n =
      if !depth > 0
      then Rng.int r 4
      else (
        match Rng.int r 100 with
        | x when x < 25 -> 0
        | x when x < 75 -> Rng.range r 1 3
        | x when x < 94 -> Rng.range r 4 12
        | _ -> Rng.range r 127 140 (* past the one-byte Nat0 count *))
    in
    incr depth;
    let l = list_init n (fun () -> g r) in
    decr depth;
    l

  let option g r = if Rng.int r 10 < 3 then None else Some (g r)

  (* A random [Schema.t] for mid-stream Handshakes: it is only printed, never
     used by a Delta, so its fingerprint must not be one the stream uses.  Its
     shape is one an OCaml type could have, as a worker's schemas always do:
     field names are distinct OCaml field names starting with a lowercase
     letter (so their Patch constructors are distinct too), enum names are
     distinct constructors, records and enums are not empty.  The free-form
     strings (schema name, defaults, output names) stay adversarial. *)
  let keywords =
    [ "and"; "as"; "assert"; "begin"; "class"; "constraint"; "do"; "done"; "downto"; "else"; "end"
    ; "exception"; "external"; "false"; "for"; "fun"; "function"; "functor"; "if"; "in"; "include"
    ; "inherit"; "initializer"; "lazy"; "let"; "match"; "method"; "module"; "mutable"; "new"
    ; "nonrec"; "object"; "of"; "open"; "or"; "private"; "rec"; "sig"; "struct"; "then"; "to"
    ; "true"; "try"; "type"; "val"; "virtual"; "when"; "while"; "with"; "land"; "lor"; "lxor"
    ; "lsl"; "lsr"; "asr"; "mod"
    ]

  let ident_rest = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789___'"

  let ident r ~first =
    let n = if Rng.int r 20 = 0 then Rng.range r 13 40 else Rng.range r 0 12 in
    let rest = string_of r n (fun r -> ident_rest.[Rng.int r (String.length ident_rest)]) in
    String.make 1 first ^ rest

  (* [n] distinct names from [make] *)
  let distinct r n make =
    let rec go acc k =
      if k = 0
      then List.rev acc
      else (
        let x = make r in
        if List.mem x acc then go acc k else go (x :: acc) (k - 1))
    in
    go [] n

  let field_name r =
    let rec go () =
      let s = ident r ~first:(Char.chr (Rng.range r 97 122)) in
      if List.mem s keywords then go () else s
    in
    go ()

  let ctor_name r = ident r ~first:(Char.chr (Rng.range r 65 90))

  let default r =
    match Rng.int r 4 with
    | 0 | 1 -> None
    | 2 -> Some (Rng.pick r [| "()"; "0"; "false"; "(())"; "\"a b\""; "((px 0)(size 0))" |])
    | _ -> Some (string r)

  let rec field_type r d : Schema.field_type =
    match Rng.int r (if d >= 2 then 6 else 10) with
    | 0 -> Int
    | 1 -> Int32
    | 2 -> Int64
    | 3 -> Float
    | 4 -> Bool
    | 5 -> String
    | 6 -> Option (field_type r (d + 1))
    | 7 -> List (field_type r (d + 1))
    | 8 -> Record (fields r (d + 1) (Rng.range r 1 3))
    | _ -> Enum (distinct r (Rng.range r 1 4) ctor_name)

  and fields r d n : Schema.field list =
    List.map
      (fun name ->
        let typ = field_type r d in
        let default = default r in
        ({ name; typ; default } : Schema.field))
      (distinct r n field_name)

  let rec schema r : Schema.t =
    let name = string r in
    let version = int r in
    let key = field_type r 1 in
    let fields = fields r 1 (Rng.range r 1 5) in
    let s : Schema.t = { name; version; key; fields } in
    if List.exists (fun (e : G.entry) -> e.fingerprint = Schema.fingerprint s) G.all
    then schema r
    else s
end

(* ---------- Realistic values (profiles demo and bench) ---------- *)

module Real = struct
  let now = ref 0L (* the current envelope time, for timestamps inside rows *)

  let symbols =
    [| "AAPL"; "MSFT"; "GOOGL"; "AMZN"; "NVDA"; "META"; "TSLA"; "JPM"; "V"; "XOM"; "BRK.B"; "KO" |]

  let bases =
    [| 189.52; 374.18; 138.71; 146.09; 478.93; 334.62; 241.27; 157.84; 251.43; 104.17; 362.08
     ; 59.33
    |]

  let venues = [| "XNYS"; "XNAS"; "BATS"; "ARCX"; "IEXG"; "EDGX" |]
  let brokers = [| "GSCO"; "MSCO"; "JPMS"; "CITI"; "UBSS"; "VIRT"; "CDRG" |]
  let desks = [| "eq-us-flow"; "eq-us-delta1"; "eq-eu-flow"; "etf-mm"; "index-arb" |]
  let tags = [| "core"; "hedge"; "index"; "short-term"; "restricted"; "esg" |]
  let clients = [| "acme-capital"; "blue-harbor"; "north-ridge"; "pension-fund-7" |]
  let cents x = Float.round (x *. 100.) /. 100.
  let symbol_index r = Rng.int r (Array.length symbols)

  let price_of i r =
    let drift = (Rng.unit_float r -. 0.5) *. 0.04 in
    cents (bases.(i) *. (1. +. drift))

  let symbol_and_price r =
    let i = symbol_index r in
    let px = price_of i r in
    symbols.(i), px

  let price_for sym r =
    let rec find i = if i = Array.length symbols || symbols.(i) = sym then i else find (i + 1) in
    let i = find 0 in
    if i = Array.length symbols then cents (10. +. (Rng.unit_float r *. 490.)) else price_of i r

  let lots r = 100 * Rng.range r 1 50
  let recent_ns r = Int64.sub !now (Int64.of_int (Rng.range r 0 5_000_000))
end

let choose p ~adv ~real r =
  match p with
  | Interop -> adv r
  | Demo | Bench -> real r

(* ---------- Deltas of one concrete schema ---------- *)

type generated =
  { key_bytes : string
  ; delta_bytes : string
  ; typed_view : delta_msg -> Sexp.t (* the delta_view, given the delta_msg around it *)
  }

module type ROW_GEN = sig
  module M : G.S

  val key : profile -> Rng.t -> M.key
  val row : profile -> Rng.t -> M.key -> M.row
  (* the update of field number [i] (0-based, in schema order) *)
  val update : profile -> Rng.t -> M.key -> int -> M.update
end

module Delta_gen (X : ROW_GEN) = struct
  open X

  let fields = List.length M.schema.fields

  let delta p r k : M.delta =
    match Rng.int r 100 with
    | x when x < 45 -> M.Set (row p r k)
    | x when x < 85 ->
      M.Patch
        (match p with
         | Interop ->
           (* any fields, in any order, repeats included: all are legal *)
           Adv.list (fun r -> update p r k (Rng.int r fields)) r
         | Demo | Bench ->
           (* what a worker sends: a few distinct fields, in schema order *)
           let picked = Array.init fields (fun _ -> Rng.int r 3 = 0) in
           if not (Array.exists Fun.id picked) then picked.(Rng.int r fields) <- true;
           List.filter_map
             (fun i -> if picked.(i) then Some (update p r k i) else None)
             (List.init fields Fun.id))
    | _ -> M.Remove

  let make p r =
    let k = key p r in
    let d = delta p r k in
    { key_bytes = F.to_string M.bin_writer_key k
    ; delta_bytes = F.to_string M.bin_writer_delta d
    ; typed_view =
        (fun (dm : delta_msg) ->
          sexp_of_delta_view M.sexp_of_key M.sexp_of_delta
            { source_output = dm.source_output
            ; key = k
            ; delta = d
            ; sequence_no = dm.sequence_no
            ; watermark_ns = dm.watermark_ns
            })
    }
end

module Vwap_gen = Delta_gen (struct
  module M = G.Vwap_v2
  open M

  let key = choose ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.symbols)
  let price p r k = choose p r ~adv:Adv.float ~real:(Real.price_for k)
  let volume p r = choose p r ~adv:Adv.int ~real:Real.lots

  let venue p r =
    choose p r ~adv:(Adv.option Adv.string) ~real:(fun r ->
      if Rng.percent r 85. then Some (Rng.pick r Real.venues) else None)

  let row p r k =
    let price = price p r k in
    let volume = volume p r in
    let venue = venue p r in
    { price; volume; venue }

  let update p r k i =
    match i with
    | 0 -> Price (price p r k)
    | 1 -> Volume (volume p r)
    | _ -> Venue (venue p r)
end)

module Trades_gen = Delta_gen (struct
  module M = G.Trades_v1
  open M

  let key = choose ~adv:Adv.int64 ~real:(fun r -> Int64.of_int (Rng.range r 7_000_000_000 7_999_999_999))
  let symbol p r = choose p r ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.symbols)
  let price p r = choose p r ~adv:Adv.float ~real:(fun r -> snd (Real.symbol_and_price r))
  let qty p r = choose p r ~adv:Adv.int32 ~real:(fun r -> Int32.of_int (Real.lots r))
  let side r = Rng.pick r [| Side.Buy; Side.Sell; Side.Short_sell |]
  let exec_ns p r = choose p r ~adv:Adv.int64 ~real:Real.recent_ns
  let is_block p r = choose p r ~adv:Adv.bool ~real:(fun r -> Rng.percent r 5.)

  let venue p r =
    choose p r ~adv:(Adv.option (Adv.option Adv.string)) ~real:(fun r ->
      match Rng.int r 10 with
      | 0 -> None
      | 1 -> Some None
      | _ -> Some (Some (Rng.pick r Real.venues)))

  let fees p r =
    choose p r ~adv:(Adv.list (Adv.option Adv.float)) ~real:(fun r ->
      let exchange = Real.cents (Rng.unit_float r *. 3.) in
      let clearing = if Rng.bool r then Some 0.35 else None in
      [ Some exchange; clearing ])

  let party p r : Party.t =
    let name = choose p r ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.brokers) in
    let account = choose p r ~adv:Adv.int ~real:(fun r -> Rng.range r 10000 99999) in
    let role = Rng.pick r [| Role.Maker; Role.Taker |] in
    { name; account; role }

  let parties p r =
    match p with
    | Interop -> Adv.list (party p) r
    | Demo | Bench ->
      let maker = party p r in
      let taker = party p r in
      [ { maker with role = Role.Maker }; { taker with role = Role.Taker } ]

  let row p r (_ : key) =
    let symbol = symbol p r in
    let price = price p r in
    let qty = qty p r in
    let side = side r in
    let exec_ns = exec_ns p r in
    let is_block = is_block p r in
    let venue = venue p r in
    let fees = fees p r in
    let parties = parties p r in
    { symbol; price; qty; side; currency = Currency.USD; exec_ns; is_block; venue; fees; parties }

  let update p r (_ : key) i =
    match i with
    | 0 -> Symbol (symbol p r)
    | 1 -> Price (price p r)
    | 2 -> Qty (qty p r)
    | 3 -> Side (side r)
    | 4 -> Currency Currency.USD
    | 5 -> Exec_ns (exec_ns p r)
    | 6 -> Is_block (is_block p r)
    | 7 -> Venue (venue p r)
    | 8 -> Fees (fees p r)
    | _ -> Parties (parties p r)
end)

module Book_gen = Delta_gen (struct
  module M = G.Book_v4
  open M

  let venue r = Rng.pick r [| Venue.XNYS; Venue.XNAS; Venue.BATS; Venue.ARCX; Venue.IEXG |]

  let key p r =
    let symbol = choose p r ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.symbols) in
    let venue = venue r in
    { symbol; venue }

  let px p r k = choose p r ~adv:Adv.float ~real:(Real.price_for k.symbol)

  let quote p r k : Quote.t =
    let px = px p r k in
    let size = choose p r ~adv:Adv.int ~real:Real.lots in
    { px; size }

  let side_quote p r k =
    choose p r ~adv:(Adv.option (fun r -> quote p r k)) ~real:(fun r ->
      if Rng.percent r 95. then Some (quote p r k) else None)

  let level p r k : Level.t =
    let px = px p r k in
    let size = choose p r ~adv:Adv.int ~real:Real.lots in
    let orders = choose p r ~adv:Adv.int32 ~real:(fun r -> Int32.of_int (Rng.range r 1 40)) in
    { px; size; orders }

  let levels p r k =
    choose p r ~adv:(Adv.list (fun r -> level p r k)) ~real:(fun r ->
      let top = px p r k in
      list_init 5 (fun () ->
        let size = Real.lots r in
        let orders = Int32.of_int (Rng.range r 1 40) in
        ({ px = Real.cents (top -. (0.01 *. float_of_int (Rng.int r 20))); size; orders }
          : Level.t)))

  let status p r =
    match p with
    | Interop -> Rng.pick r [| Status.Open; Status.Halted; Status.Closed; Status.Auction |]
    | Demo | Bench ->
      Rng.weighted r [| 90, Status.Open; 4, Status.Auction; 3, Status.Halted; 3, Status.Closed |]

  let stats p r k : Stats.t =
    let high = px p r k in
    let low = px p r k in
    let last_px = px p r k in
    let at_ns = choose p r ~adv:Adv.int64 ~real:Real.recent_ns in
    let vwap =
      choose p r ~adv:(Adv.option Adv.float) ~real:(fun r ->
        if Rng.percent r 90. then Some (px p r k) else None)
    in
    { high; low; last = { px = last_px; at_ns }; vwap }

  let crossed p r = choose p r ~adv:Adv.bool ~real:(fun r -> Rng.percent r 1.)

  let row p r k =
    let bid = side_quote p r k in
    let ask = side_quote p r k in
    let levels = levels p r k in
    let status = status p r in
    let stats = stats p r k in
    let crossed = crossed p r in
    { bid; ask; levels; status; stats; crossed }

  let update p r k i =
    match i with
    | 0 -> Bid (side_quote p r k)
    | 1 -> Ask (side_quote p r k)
    | 2 -> Levels (levels p r k)
    | 3 -> Status (status p r)
    | 4 -> Stats (stats p r k)
    | _ -> Crossed (crossed p r)
end)

module Positions_gen = Delta_gen (struct
  module M = G.Positions_v1
  open M

  let key = choose ~adv:Adv.int ~real:(fun r -> Rng.range r 100001 100050)
  let desk p r = choose p r ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.desks)

  let qty p r =
    choose p r ~adv:Adv.int64 ~real:(fun r -> Int64.of_int (100 * Rng.range r (-5000) 5000))

  let avg_px p r =
    choose p r ~adv:Adv.float ~real:(fun r -> snd (Real.symbol_and_price r))

  let limits p r =
    choose p r ~adv:(Adv.option (Adv.list Adv.int32)) ~real:(fun r ->
      if Rng.percent r 80. then Some [ 1_000_000l; 5_000_000l ] else None)

  let flags p r =
    choose p r ~adv:(Adv.list Adv.bool) ~real:(fun r -> list_init 3 (fun () -> Rng.bool r))

  let tags p r =
    choose p r ~adv:(Adv.list Adv.string) ~real:(fun r ->
      list_init (Rng.int r 3) (fun () -> Rng.pick r Real.tags))

  let matrix p r =
    choose p r ~adv:(Adv.list (Adv.list Adv.int)) ~real:(fun r ->
      list_init (Rng.range r 1 3) (fun () ->
        list_init (Rng.range r 1 4) (fun () -> Rng.range r (-9) 99)))

  let deep p r =
    choose p r ~adv:(Adv.option (Adv.option (Adv.option Adv.int))) ~real:(fun r ->
      match Rng.int r 6 with
      | 0 -> None
      | 1 -> Some None
      | 2 -> Some (Some None)
      | _ -> Some (Some (Some (Rng.range r 1 9))))

  let note p r =
    choose p r ~adv:(Adv.option Adv.string) ~real:(fun r ->
      if Rng.percent r 20. then Some "rebalanced after the close" else None)

  let row p r (_ : key) =
    let desk = desk p r in
    let qty = qty p r in
    let avg_px = avg_px p r in
    let limits = limits p r in
    let flags = flags p r in
    let tags = tags p r in
    let matrix = matrix p r in
    let deep = deep p r in
    let note = note p r in
    { desk; qty; avg_px; limits; flags; tags; matrix; deep; note }

  let update p r (_ : key) i =
    match i with
    | 0 -> Desk (desk p r)
    | 1 -> Qty (qty p r)
    | 2 -> Avg_px (avg_px p r)
    | 3 -> Limits (limits p r)
    | 4 -> Flags (flags p r)
    | 5 -> Tags (tags p r)
    | 6 -> Matrix (matrix p r)
    | 7 -> Deep (deep p r)
    | _ -> Note (note p r)
end)

module Orders_gen = Delta_gen (struct
  module M = G.Orders_v3
  open M

  let key =
    choose ~adv:Adv.string ~real:(fun r -> Printf.sprintf "ORD-%08d" (Rng.int r 100_000_000))

  let symbol p r = choose p r ~adv:Adv.string ~real:(fun r -> Rng.pick r Real.symbols)
  let px p r = choose p r ~adv:Adv.float ~real:(fun r -> snd (Real.symbol_and_price r))
  let qty p r = choose p r ~adv:Adv.int ~real:Real.lots
  let side r = Rng.pick r [| Side.Buy; Side.Sell |]
  let tif r = Rng.pick r [| Tif.Day; Tif.Ioc; Tif.Gtc |]

  let client p r =
    choose p r ~adv:(Adv.option Adv.string) ~real:(fun r ->
      if Rng.percent r 70. then Some (Rng.pick r Real.clients) else None)

  let row p r (_ : key) =
    let symbol = symbol p r in
    let px = px p r in
    let qty = qty p r in
    let side = side r in
    let tif = tif r in
    let client = client p r in
    { symbol; px; qty; side; tif; client }

  let update p r (_ : key) i =
    match i with
    | 0 -> Symbol (symbol p r)
    | 1 -> Px (px p r)
    | 2 -> Qty (qty p r)
    | 3 -> Side (side r)
    | 4 -> Tif (tif r)
    | _ -> Client (client p r)
end)

(* One generator per registry entry, same order as [G.all]. *)
let delta_makers : (G.entry * (profile -> Rng.t -> generated)) array =
  let maker (e : G.entry) =
    match e.fingerprint with
    | "vwap/v2" -> Vwap_gen.make
    | "trades/v1" -> Trades_gen.make
    | "book/v4" -> Book_gen.make
    | "positions_by_account_and_desk/v1" -> Positions_gen.make
    | "orders/v3" -> Orders_gen.make
    | fp -> failwith ("no generator for " ^ fp)
  in
  Array.of_list (List.map (fun e -> e, maker e) G.all)

(* ---------- The stream ---------- *)

type out =
  { bin : out_channel option
  ; sexp : out_channel option
  ; hum : out_channel option
  }

type state =
  { out : out
  ; mutable seq : int64 (* last envelope seq written *)
  ; mutable time : int64 (* envelope time of the next message *)
  ; seq_nos : int array (* last Delta sequence_no, per entry of [delta_makers] *)
  }

let emit st ~tag ~fingerprint ~payload ~(view : unit -> Sexp.t message_view) =
  st.seq <- Int64.succ st.seq;
  Option.iter (fun oc -> output_string oc (F.envelope ~tag ~seq:st.seq ~time_ns:st.time ~fingerprint ~payload)) st.out.bin;
  if st.out.sexp <> None || st.out.hum <> None
  then (
    let s =
      sexp_of_envelope_view Fun.id
        { seq = st.seq; time_ns = st.time; schema = fingerprint; msg = view () }
    in
    Option.iter
      (fun oc ->
        output_string oc (Sexp.to_string s);
        output_char oc '\n')
      st.out.sexp;
    Option.iter
      (fun oc ->
        output_string oc (Sexp.to_string_hum s);
        output_char oc '\n')
      st.out.hum)

let emit_handshake st (h : handshake) =
  emit st ~tag:0 ~fingerprint:(fingerprint_of_tag 0)
    ~payload:(F.to_string bin_writer_handshake h) ~view:(fun () -> Handshake h)

let emit_checkpoint_request st (c : checkpoint_request) =
  emit st ~tag:2 ~fingerprint:(fingerprint_of_tag 2)
    ~payload:(F.to_string bin_writer_checkpoint_request c) ~view:(fun () -> Checkpoint_request c)

let emit_checkpoint_ack st (c : checkpoint_ack) =
  emit st ~tag:3 ~fingerprint:(fingerprint_of_tag 3)
    ~payload:(F.to_string bin_writer_checkpoint_ack c) ~view:(fun () -> Checkpoint_ack c)

let emit_heartbeat st (h : heartbeat) =
  emit st ~tag:4 ~fingerprint:(fingerprint_of_tag 4)
    ~payload:(F.to_string bin_writer_heartbeat h) ~view:(fun () -> Heartbeat h)

let emit_schema_negotiation st (n : schema_negotiation) =
  emit st ~tag:5 ~fingerprint:(fingerprint_of_tag 5)
    ~payload:(F.to_string bin_writer_schema_negotiation n) ~view:(fun () -> Schema_negotiation n)

(* A Delta of entry [i]: its sequence_no is the entry's next one, so every
   output's sequence numbers run 1, 2, 3, ... (a clean stream, no gaps). *)
let emit_delta st p r i ~watermark =
  let (e : G.entry), make = delta_makers.(i) in
  let g = make p r in
  let watermark_ns = watermark r in
  st.seq_nos.(i) <- st.seq_nos.(i) + 1;
  let dm : delta_msg =
    { source_output = e.output
    ; key = g.key_bytes
    ; delta_bytes = g.delta_bytes
    ; sequence_no = st.seq_nos.(i)
    ; watermark_ns
    }
  in
  emit st ~tag:1 ~fingerprint:e.fingerprint ~payload:(F.to_string bin_writer_delta_msg dm)
    ~view:(fun () -> Delta (if e.declared then g.typed_view dm else sexp_of_delta_msg dm))

let declared_outputs () = List.map (fun (e : G.entry) -> e.output, e.schema) G.declared

let positions st =
  Array.to_list delta_makers
  |> List.mapi (fun i ((e : G.entry), _) -> e.output, st.seq_nos.(i))
  |> List.filter (fun (_, n) -> n > 0)

(* profile interop: a random mix of all six message types, mostly Deltas. *)
let run_interop st r ~count =
  st.time <- Rng.pick r [| 0L; 1L; 1700000000000000000L |];
  let step = Rng.pick r [| 1; 1000; 1 lsl 40 |] (* stays far from overflow up to 10^6 messages *) in
  let advance () = st.time <- Int64.add st.time (Int64.of_int (1 + Rng.int r step)) in
  if count >= 1
  then (
    let source_worker_id = Adv.string r in
    emit_handshake st { source_worker_id; output_schemas = declared_outputs (); protocol_version = 1 });
  for i = 2 to count do
    advance ();
    if i = 3 || i = 4 then Adv.force_long := 1;
    match
      Rng.weighted r
        [| 72, `Delta; 8, `Heartbeat; 5, `Request; 5, `Ack; 5, `Negotiation; 5, `Handshake |]
    with
    | `Delta ->
      let i = Rng.int r (Array.length delta_makers) in
      emit_delta st Interop r i ~watermark:(Adv.option Adv.int64)
    | `Heartbeat ->
      let worker_id = Adv.string r in
      let timestamp_ns = Adv.int64 r in
      let load = Adv.float r in
      emit_heartbeat st { worker_id; timestamp_ns; load }
    | `Request ->
      let checkpoint_id = Adv.int r in
      let requested_at_ns = Adv.int64 r in
      emit_checkpoint_request st { checkpoint_id; requested_at_ns }
    | `Ack ->
      let worker_id = Adv.string r in
      let checkpoint_id = Adv.int r in
      let positions =
        if Rng.bool r
        then positions st
        else
          Adv.list
            (fun r ->
              let name = Adv.string r in
              let n = Adv.int r in
              name, n)
            r
      in
      emit_checkpoint_ack st { worker_id; checkpoint_id; positions }
    | `Negotiation ->
      let ok = Rng.bool r in
      let errors =
        if ok && Rng.int r 10 > 0
        then []
        else
          Adv.list
            (fun r ->
              match Rng.int r 3 with
              | 0 -> "missing field " ^ Adv.string r
              | 1 ->
                let name = Adv.string r in
                let reader = Sexp.to_string (Schema.sexp_of_field_type (Adv.field_type r 0)) in
                let writer = Sexp.to_string (Schema.sexp_of_field_type (Adv.field_type r 0)) in
                Printf.sprintf "field %s: type mismatch (reader %s, writer %s)" name reader writer
              | _ -> Adv.string r)
            r
      in
      emit_schema_negotiation st { ok; errors }
    | `Handshake ->
      (* Re-declaring the real schemas (same content) or declaring unrelated
         ones: neither may change how a later Delta decodes. *)
      let source_worker_id = Adv.string r in
      let output_schemas =
        Adv.list
          (fun r ->
            if Rng.bool r
            then (
              let (e : G.entry) = Rng.pick r (Array.of_list G.declared) in
              e.output, e.schema)
            else (
              let name = Adv.string r in
              let s = Adv.schema r in
              name, s))
          r
      in
      emit_handshake st { source_worker_id; output_schemas; protocol_version = 1 }
  done

(* profiles demo and bench: what a real connection looks like. *)
let run_realistic st p r ~count =
  let worker = "md-worker-07" in
  let ms = 1_000_000L in
  st.time <- 1718900000000000000L (* 2024-06-20, 16:13:20 UTC *);
  Real.now := st.time;
  let step_max, checkpoint_every =
    match p with
    | Demo -> 130_000_000, max 8 (count / 2)
    | Interop | Bench -> 100_000, 100_000
  in
  let advance () =
    st.time <- Int64.add st.time (Int64.of_int (Rng.range r 1 step_max));
    Real.now := st.time
  in
  let heartbeat_every = Int64.mul 5000L ms in
  let next_heartbeat = ref (Int64.add st.time heartbeat_every) in
  let checkpoint_id = ref 0 in
  let ack_in = ref (-1) (* messages until the pending ack, -1 if none *) in
  if count >= 1
  then emit_handshake st { source_worker_id = worker; output_schemas = declared_outputs (); protocol_version = 1 };
  if count >= 2
  then (
    advance ();
    emit_schema_negotiation st { ok = true; errors = [] });
  for i = 3 to count do
    advance ();
    if !ack_in > 0 then decr ack_in;
    if !ack_in = 0
    then (
      ack_in := -1;
      emit_checkpoint_ack st { worker_id = worker; checkpoint_id = !checkpoint_id; positions = positions st })
    else if st.time >= !next_heartbeat
    then (
      next_heartbeat := Int64.add !next_heartbeat heartbeat_every;
      let load = Float.round (Rng.unit_float r *. 100.) /. 100. in
      emit_heartbeat st { worker_id = worker; timestamp_ns = st.time; load })
    else if i mod checkpoint_every = 0 && !ack_in < 0 && i + 3 <= count
    then (
      (* the ack follows three messages later, with the positions it covers *)
      incr checkpoint_id;
      ack_in := 3;
      emit_checkpoint_request st { checkpoint_id = !checkpoint_id; requested_at_ns = st.time })
    else (
      let i = Rng.weighted r [| 35, 0; 25, 1; 20, 2; 10, 3; 10, 4 |] in
      emit_delta st p r i ~watermark:(fun r ->
        if Rng.percent r 80.
        then Some (Int64.sub st.time (Int64.mul (Int64.of_int (Rng.range r 1 50)) ms))
        else None))
  done

let write_schemas dir =
  if not (Sys.file_exists dir) then Sys.mkdir dir 0o755;
  List.iter
    (fun (e : G.entry) ->
      let path = Filename.concat dir (Printf.sprintf "%s_v%d.sexp" e.schema.name e.schema.version) in
      let oc = open_out_bin path in
      output_string oc (Sexp.to_string_hum (Schema.sexp_of_t e.schema));
      output_char oc '\n';
      close_out oc)
    G.declared

(* ---------- -selftest: the README's worked bytes, and the schemas ---------- *)

module Selftest = struct
  let failures = ref 0
  let checks = ref 0

  let check name ok detail =
    incr checks;
    if not ok
    then (
      incr failures;
      Printf.eprintf "selftest FAILED: %s\n%s\n%!" name (Lazy.force detail))

  let hex s =
    String.concat " " (List.init (String.length s) (fun i -> Printf.sprintf "%02x" (Char.code s.[i])))

  let unhex h =
    let digits = String.concat "" (String.split_on_char ' ' (String.concat "" (String.split_on_char '\n' h))) in
    String.init (String.length digits / 2) (fun i -> Char.chr (int_of_string ("0x" ^ String.sub digits (2 * i) 2)))

  let check_bytes name got expected_hex =
    let expected = unhex expected_hex in
    check name (got = expected)
      (lazy (Printf.sprintf "  expected %s\n  got      %s" (hex expected) (hex got)))

  let check_text name got expected =
    check name (got = expected) (lazy (Printf.sprintf "  expected %s\n  got      %s" expected got))

  (* Copied from README section 7 (and 3, 4, 5): the spec, not our output.

     README erratum: the Delta dump in section 7 is 102 bytes, not 104.  Its
     fingerprint padding has 23 zero bytes where "vwap/v2" needs 25 (32 - 7),
     so its payload length 29 00 00 00 sits at offset 53 instead of 55.  The
     README's text (104 bytes), that length (0x29 = 41; 63 + 41 = 104) and its
     CRC (1e 92 31 9b, which is the CRC of the 100-byte header + payload with
     the full padding) all agree with 104.  [readme_delta] is the dump
     verbatim; the check below inserts the two missing zero bytes, and also
     checks that they are the only difference. *)
  let readme_delta =
    "52 49 50 50 01 01 00 2a 00 00 00 00 00 00 00 7b 00 2a 36 fe 9c 97 17 76\n\
     77 61 70 2f 76 32 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n\
     00 00 00 00 00 29 00 00 00 04 76 77 61 70 05 04 41 41 50 4c 12 01 02 00\n\
     00 00 00 00 00 50 59 40 02 01 04 58 4e 59 53 2a 01 fc 00 00 2a 36 fe 9c\n\
     97 17 1e 92 31 9b"

  let readme_heartbeat =
    "52 49 50 50 01 04 00 01 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 72\n\
     69 70 70 6c 65 2e 68 65 61 72 74 62 65 61 74 2f 76 31 00 00 00 00 00 00\n\
     00 00 00 00 00 00 00 0c 00 00 00 02 77 31 05 00 00 00 00 00 00 e0 3f a5\n\
     d7 5b 81"

  let readme_delta_line =
    "((seq 42)(time_ns 1700000000000000123)(schema vwap/v2)(msg(Delta((source_output vwap)(key AAPL)(delta(Patch((Price 101.25)(Venue(XNYS)))))(sequence_no 42)(watermark_ns(1700000000000000000))))))"

  let readme_delta_raw_line =
    "((seq 42)(time_ns 1700000000000000123)(schema vwap/v2)(msg(Delta((source_output vwap)(key\"\\004AAPL\")(delta_bytes\"\\001\\002\\000\\000\\000\\000\\000\\000PY@\\002\\001\\004XNYS\")(sequence_no 42)(watermark_ns(1700000000000000000))))))"

  let readme_heartbeat_line =
    "((seq 1)(time_ns 5)(schema ripple.heartbeat/v1)(msg(Heartbeat((worker_id w1)(timestamp_ns 5)(load 0.5)))))"

  let readme_vwap_schema =
    "((name vwap) (version 2) (key String)\n\
    \ (fields\n\
    \  (((name price) (typ Float) (default ()))\n\
    \   ((name volume) (typ Int) (default ()))\n\
    \   ((name venue) (typ (Option String)) (default (\"()\"))))))"

  let line ~seq ~time_ns ~schema msg =
    Sexp.to_string (sexp_of_envelope_view Fun.id { seq; time_ns; schema; msg })

  let readme () =
    check "crc32c check value" (F.crc32c "123456789" 0 9 = 0xe3069283) (lazy "");
    let open Bin_prot.Std in
    check_bytes "int 300" (F.to_string bin_writer_int 300) "fe 2c 01";
    check_bytes "int -1" (F.to_string bin_writer_int (-1)) "ff ff";
    check_bytes "int 128" (F.to_string bin_writer_int 128) "fe 80 00";
    check_bytes "int64" (F.to_string bin_writer_int64 1700000000000000000L) "fc 00 00 2a 36 fe 9c 97 17";
    check_bytes "float 101.25" (F.to_string bin_writer_float 101.25) "00 00 00 00 00 50 59 40";
    let module V = G.Vwap_v2 in
    let key = F.to_string V.bin_writer_key "AAPL" in
    let delta = V.Patch [ V.Price 101.25; V.Venue (Some "XNYS") ] in
    let delta_bytes = F.to_string V.bin_writer_delta delta in
    check_bytes "vwap key" key "04 41 41 50 4c";
    check_bytes "vwap patch" delta_bytes "01 02 00 00 00 00 00 00 50 59 40 02 01 04 58 4e 59 53";
    check_bytes "vwap set"
      (F.to_string V.bin_writer_delta (V.Set { price = 100.; volume = 300; venue = None }))
      "00 00 00 00 00 00 00 59 40 fe 2c 01 00";
    check_bytes "vwap remove" (F.to_string V.bin_writer_delta V.Remove) "02";
    let dm : delta_msg =
      { source_output = "vwap"
      ; key
      ; delta_bytes
      ; sequence_no = 42
      ; watermark_ns = Some 1700000000000000000L
      }
    in
    let env =
      F.envelope ~tag:1 ~seq:42L ~time_ns:1700000000000000123L ~fingerprint:"vwap/v2"
        ~payload:(F.to_string bin_writer_delta_msg dm)
    in
    let verbatim = unhex readme_delta in
    check "README delta dump is the known 102-byte erratum" (String.length verbatim = 102) (lazy "");
    let fixed = String.sub verbatim 0 53 ^ "\000\000" ^ String.sub verbatim 53 (String.length verbatim - 53) in
    check_bytes "README delta envelope (padding restored)" env (hex fixed);
    check "README delta envelope: CRC as printed in the README"
      (String.sub env 100 4 = String.sub verbatim 98 4) (lazy "");
    let h = F.read_header env 0 in
    check "README delta reads back" (h.tag = 1 && h.fingerprint = "vwap/v2" && h.payload_len = 41) (lazy "");
    let typed =
      sexp_of_delta_view V.sexp_of_key V.sexp_of_delta
        { source_output = "vwap"; key = "AAPL"; delta; sequence_no = 42; watermark_ns = dm.watermark_ns }
    in
    check_text "README delta line (typed)"
      (line ~seq:42L ~time_ns:1700000000000000123L ~schema:"vwap/v2" (Delta typed))
      readme_delta_line;
    check_text "README delta line (raw)"
      (line ~seq:42L ~time_ns:1700000000000000123L ~schema:"vwap/v2" (Delta (sexp_of_delta_msg dm)))
      readme_delta_raw_line;
    let hb = { worker_id = "w1"; timestamp_ns = 5L; load = 0.5 } in
    let env =
      F.envelope ~tag:4 ~seq:1L ~time_ns:5L ~fingerprint:(fingerprint_of_tag 4)
        ~payload:(F.to_string bin_writer_heartbeat hb)
    in
    check_bytes "README heartbeat envelope" env readme_heartbeat;
    check_text "README heartbeat line"
      (line ~seq:1L ~time_ns:5L ~schema:"ripple.heartbeat/v1" (Heartbeat hb))
      readme_heartbeat_line;
    check_text "README vwap_v2.sexp" (Sexp.to_string_hum (Schema.sexp_of_t V.schema)) readme_vwap_schema;
    (* a corrupted byte must fail the CRC *)
    let bad = Bytes.of_string env in
    Bytes.set bad 60 'x';
    check "CRC catches a corrupted payload byte"
      (match F.read_header (Bytes.to_string bad) 0 with
       | _ -> false
       | exception F.Bad_envelope _ -> true)
      (lazy "")

  (* A decoder driven only by the [Schema.t], as the Python side works: what
     it prints for typed bytes must be what the typed sexp converter prints.
     This is what keeps the hand-written [Schema.t] values honest. *)
  module Generic = struct
    module R = Bin_prot.Read

    let rec value buf pos_ref (t : Schema.field_type) : Sexp.t =
      match t with
      | Int -> Sexp.Atom (string_of_int (R.bin_read_int buf ~pos_ref))
      | Int32 -> Sexp.Atom (Int32.to_string (R.bin_read_int32 buf ~pos_ref))
      | Int64 -> Sexp.Atom (Int64.to_string (R.bin_read_int64 buf ~pos_ref))
      | Float -> Sexplib.Std.sexp_of_float (R.bin_read_float buf ~pos_ref)
      | Bool -> Sexplib.Std.sexp_of_bool (R.bin_read_bool buf ~pos_ref)
      | String -> Sexp.Atom (R.bin_read_string buf ~pos_ref)
      | Option t ->
        (match R.bin_read_int_8bit buf ~pos_ref with
         | 0 -> Sexp.List []
         | 1 -> Sexp.List [ value buf pos_ref t ]
         | n -> failwith (Printf.sprintf "option tag %d" n))
      | List t ->
        let n = (R.bin_read_nat0 buf ~pos_ref :> int) in
        Sexp.List (list_init n (fun () -> value buf pos_ref t))
      | Record fields -> record buf pos_ref fields
      | Enum names -> Sexp.Atom (List.nth names (R.bin_read_int_8bit buf ~pos_ref))

    and record buf pos_ref fields =
      List
        (List.map
           (fun (f : Schema.field) ->
             let v = value buf pos_ref f.typ in
             Sexp.List [ Sexp.Atom f.name; v ])
           fields)

    let whole s f =
      let buf = Bin_prot.Common.create_buf (String.length s) in
      Bin_prot.Common.blit_string_buf s buf ~len:(String.length s);
      let pos_ref = ref 0 in
      let v = f buf pos_ref in
      if !pos_ref <> String.length s then failwith "trailing bytes";
      v

    let key (s : Schema.t) bytes = whole bytes (fun buf pos_ref -> value buf pos_ref s.key)

    let delta (s : Schema.t) bytes : Sexp.t =
      whole bytes (fun buf pos_ref ->
        match R.bin_read_int_8bit buf ~pos_ref with
        | 0 -> Sexp.List [ Sexp.Atom "Set"; record buf pos_ref s.fields ]
        | 1 ->
          let n = (R.bin_read_nat0 buf ~pos_ref :> int) in
          let update () =
            let f = List.nth s.fields (R.bin_read_int_8bit buf ~pos_ref) in
            let v = value buf pos_ref f.typ in
            Sexp.List [ Sexp.Atom (String.capitalize_ascii f.name); v ]
          in
          Sexp.List [ Sexp.Atom "Patch"; Sexp.List (list_init n update) ]
        | 2 -> Sexp.Atom "Remove"
        | n -> failwith (Printf.sprintf "delta tag %d" n))
  end

  let schemas () =
    Array.iter
      (fun ((e : G.entry), make) ->
        check (e.fingerprint ^ ": Schema.t survives its sexp")
          (Schema.t_of_sexp (Schema.sexp_of_t e.schema) = e.schema) (lazy "");
        List.iter
          (fun (p, n) ->
            let r = Rng.make 12345 in
            for i = 1 to n do
              let g = make p r in
              let dm : delta_msg =
                { source_output = e.output
                ; key = g.key_bytes
                ; delta_bytes = g.delta_bytes
                ; sequence_no = i
                ; watermark_ns = None
                }
              in
              let expected = g.typed_view dm in
              let got =
                try
                  sexp_of_delta_view Fun.id Fun.id
                    { source_output = e.output
                    ; key = Generic.key e.schema g.key_bytes
                    ; delta = Generic.delta e.schema g.delta_bytes
                    ; sequence_no = i
                    ; watermark_ns = None
                    }
                with
                | exn -> Sexp.Atom ("generic decode failed: " ^ Printexc.to_string exn)
              in
              check
                (Printf.sprintf "%s: Schema.t decode of value %d equals the typed sexp" e.fingerprint i)
                (Sexp.equal got expected)
                (lazy (Printf.sprintf "  typed   %s\n  generic %s" (Sexp.to_string expected) (Sexp.to_string got)))
            done)
          [ Interop, 3000; Demo, 300 ])
      delta_makers

  let run () =
    readme ();
    schemas ();
    if !failures > 0
    then (
      Printf.eprintf "selftest: %d of %d checks failed\n" !failures !checks;
      exit 1)
    else Printf.printf "selftest ok: %d checks\n" !checks
end

(* ---------- main ---------- *)

let () =
  let seed = ref 1 in
  let count = ref 1000 in
  let bin = ref "" in
  let sexp = ref "" in
  let hum = ref "" in
  let schemas = ref "" in
  let profile = ref Interop in
  let selftest = ref false in
  let set_profile = function
    | "interop" -> profile := Interop
    | "demo" -> profile := Demo
    | "bench" -> profile := Bench
    | s -> raise (Arg.Bad ("unknown profile " ^ s ^ " (interop, demo or bench)"))
  in
  let spec =
    [ "-seed", Arg.Set_int seed, "N  PRNG seed (default 1)"
    ; "-count", Arg.Set_int count, "N  number of messages, the Handshake included (default 1000)"
    ; "-bin", Arg.Set_string bin, "FILE  write the stream (envelopes back to back)"
    ; "-sexp", Arg.Set_string sexp, "FILE  write one canonical line per message"
    ; "-hum", Arg.Set_string hum, "FILE  write each message's Sexp.to_string_hum and a newline"
    ; "-schemas", Arg.Set_string schemas, "DIR  write NAME_vVERSION.sexp per declared schema"
    ; "-profile", Arg.String set_profile, "interop|demo|bench  (default interop)"
    ; "-selftest", Arg.Set selftest, " check the README's worked examples and the schemas"
    ]
  in
  let usage = "ripple_gen [-profile interop|demo|bench] [-seed N] [-count N] [-bin F] [-sexp F] [-hum F] [-schemas DIR] | -selftest" in
  Arg.parse spec (fun a -> raise (Arg.Bad ("unexpected argument " ^ a))) usage;
  if !selftest
  then Selftest.run ()
  else (
    if !count < 0 then (prerr_endline "ripple_gen: -count must be >= 0"; exit 2);
    let open_opt path = if path = "" then None else Some (open_out_bin path) in
    let out = { bin = open_opt !bin; sexp = open_opt !sexp; hum = open_opt !hum } in
    let st = { out; seq = 0L; time = 0L; seq_nos = Array.make (Array.length delta_makers) 0 } in
    let r = Rng.make !seed in
    (match !profile with
     | Interop -> run_interop st r ~count:!count
     | Demo | Bench -> run_realistic st !profile r ~count:!count);
    List.iter (Option.iter close_out) [ out.bin; out.sexp; out.hum ];
    if !schemas <> "" then write_schemas !schemas)
