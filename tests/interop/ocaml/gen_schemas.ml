(* Concrete schemas for the interop tests, written the way a Ripple worker
   writes them: real OCaml types with [@@deriving bin_io, sexp], in the style
   of [Ripple_wire.Vwap_v2], next to the [Schema.t] that describes them.

   The bytes and text that ripple_gen produces come from these types, never
   from the [Schema.t]; the Python side only ever sees the [Schema.t].  So
   the two must agree, and [ripple_gen -selftest] checks that they do (it
   decodes typed encodings generically from the [Schema.t] and compares).

   Coverage, across the schemas below, of [Schema.field_type]:
     Int       vwap.volume, positions key, trades.parties[].account, ...
     Int32     trades.qty, book.levels[].orders, positions.limits
     Int64     trades key, trades.exec_ns, positions.qty, book.stats.last.at_ns
     Float     everywhere prices are
     Bool      trades.is_block, positions.flags, book.crossed
     String    vwap key, orders key, trades.symbol, ...
     Option    vwap.venue; option of option: trades.venue;
               option of option of option: positions.deep;
               option of record: book.bid/ask; option of list: positions.limits
     List      list of options: trades.fees; list of records: trades.parties,
               book.levels; list of lists: positions.matrix
     Record    key: book; nested record in a record: book.stats.last
     Enum      trades.side, book.status, book key's venue, a one-constructor
               enum: trades.currency
   Keys: String (vwap, orders), Int64 (trades), Record (book), Int (positions).

   [orders/v3] is never declared in a Handshake: its Deltas must print as the
   raw [delta_msg] (README section 5).

   Naming rules the Python side relies on: field names are snake_case; the
   Patch constructor of a field is the field name with only its first letter
   capitalized (ask_px -> Ask_px); Enum strings are the OCaml constructor
   names.  Nested records and enums live in submodules so that their field
   and constructor names cannot shadow the row's. *)

open Bin_prot.Std
open Sexplib.Std
open Ripple_wire

let field ?default name typ : Schema.field = { name; typ; default }

(* What every concrete schema provides; [Ripple_wire.Vwap_v2] fits it. *)
module type S = sig
  type key [@@deriving bin_io, sexp]
  type row [@@deriving bin_io, sexp]
  type update [@@deriving bin_io, sexp]

  type delta =
    | Set of row
    | Patch of update list
    | Remove
  [@@deriving bin_io, sexp]

  val schema : Schema.t
end

(* ---------- vwap/v2: the reference schema, reused, not retyped ---------- *)

module Vwap_v2 = Ripple_wire.Vwap_v2

(* ---------- trades/v1: Int64 key; Int32, Enum, option of option, list of
   options, list of records holding an enum ---------- *)

module Trades_v1 = struct
  module Side = struct
    type t =
      | Buy
      | Sell
      | Short_sell
    [@@deriving bin_io, sexp]
  end

  (* A one-constructor enum: still one tag byte (00) on the wire. *)
  module Currency = struct
    type t = USD [@@deriving bin_io, sexp]
  end

  module Role = struct
    type t =
      | Maker
      | Taker
    [@@deriving bin_io, sexp]
  end

  module Party = struct
    type t =
      { name : string
      ; account : int
      ; role : Role.t
      }
    [@@deriving bin_io, sexp]
  end

  type key = int64 [@@deriving bin_io, sexp]

  type row =
    { symbol : string
    ; price : float
    ; qty : int32
    ; side : Side.t
    ; currency : Currency.t
    ; exec_ns : int64
    ; is_block : bool
    ; venue : string option option
    ; fees : float option list
    ; parties : Party.t list
    }
  [@@deriving bin_io, sexp]

  type update =
    | Symbol of string
    | Price of float
    | Qty of int32
    | Side of Side.t
    | Currency of Currency.t
    | Exec_ns of int64
    | Is_block of bool
    | Venue of string option option
    | Fees of float option list
    | Parties of Party.t list
  [@@deriving bin_io, sexp]

  type delta =
    | Set of row
    | Patch of update list
    | Remove
  [@@deriving bin_io, sexp]

  let side_t = Schema.Enum [ "Buy"; "Sell"; "Short_sell" ]
  let party_t =
    Schema.Record
      [ field "name" String; field "account" Int; field "role" (Enum [ "Maker"; "Taker" ]) ]

  let schema : Schema.t =
    { name = "trades"
    ; version = 1
    ; key = Int64
    ; fields =
        [ field "symbol" String
        ; field "price" Float
        ; field "qty" Int32
        ; field "side" side_t
        ; field "currency" (Enum [ "USD" ]) ~default:"USD"
        ; field "exec_ns" Int64
        ; field "is_block" Bool ~default:"false"
        ; field "venue" (Option (Option String)) ~default:"()"
        ; field "fees" (List (Option Float)) ~default:"()"
        ; field "parties" (List party_t) ~default:"()"
        ]
    }
end

(* ---------- book/v4: Record key (with an enum inside); option of record,
   list of records, a record nested two deep ---------- *)

module Book_v4 = struct
  module Venue = struct
    type t =
      | XNYS
      | XNAS
      | BATS
      | ARCX
      | IEXG
    [@@deriving bin_io, sexp]
  end

  module Status = struct
    type t =
      | Open
      | Halted
      | Closed
      | Auction
    [@@deriving bin_io, sexp]
  end

  module Quote = struct
    type t =
      { px : float
      ; size : int
      }
    [@@deriving bin_io, sexp]
  end

  module Level = struct
    type t =
      { px : float
      ; size : int
      ; orders : int32
      }
    [@@deriving bin_io, sexp]
  end

  module Last = struct
    type t =
      { px : float
      ; at_ns : int64
      }
    [@@deriving bin_io, sexp]
  end

  module Stats = struct
    type t =
      { high : float
      ; low : float
      ; last : Last.t
      ; vwap : float option
      }
    [@@deriving bin_io, sexp]
  end

  type key =
    { symbol : string
    ; venue : Venue.t
    }
  [@@deriving bin_io, sexp]

  type row =
    { bid : Quote.t option
    ; ask : Quote.t option
    ; levels : Level.t list
    ; status : Status.t
    ; stats : Stats.t
    ; crossed : bool
    }
  [@@deriving bin_io, sexp]

  type update =
    | Bid of Quote.t option
    | Ask of Quote.t option
    | Levels of Level.t list
    | Status of Status.t
    | Stats of Stats.t
    | Crossed of bool
  [@@deriving bin_io, sexp]

  type delta =
    | Set of row
    | Patch of update list
    | Remove
  [@@deriving bin_io, sexp]

  let venue_t = Schema.Enum [ "XNYS"; "XNAS"; "BATS"; "ARCX"; "IEXG" ]
  let quote_t = Schema.Record [ field "px" Float; field "size" Int ]

  let schema : Schema.t =
    { name = "book"
    ; version = 4
    ; key = Record [ field "symbol" String; field "venue" venue_t ]
    ; fields =
        [ field "bid" (Option quote_t) ~default:"()"
        ; field "ask" (Option quote_t) ~default:"()"
        ; field "levels"
            (List (Record [ field "px" Float; field "size" Int; field "orders" Int32 ]))
        ; field "status" (Enum [ "Open"; "Halted"; "Closed"; "Auction" ]) ~default:"Open"
        ; field "stats"
            (Record
               [ field "high" Float
               ; field "low" Float
               ; field "last" (Record [ field "px" Float; field "at_ns" Int64 ])
               ; field "vwap" (Option Float) ~default:"()"
               ])
        ; field "crossed" Bool ~default:"false"
        ]
    }
end

(* ---------- positions_by_account_and_desk/v1: Int key; its fingerprint is
   exactly 32 bytes, so the envelope field has no zero padding at all;
   option of list, list of lists, three nested options ---------- *)

module Positions_v1 = struct
  type key = int [@@deriving bin_io, sexp]

  type row =
    { desk : string
    ; qty : int64
    ; avg_px : float
    ; limits : int32 list option
    ; flags : bool list
    ; tags : string list
    ; matrix : int list list
    ; deep : int option option option
    ; note : string option
    }
  [@@deriving bin_io, sexp]

  type update =
    | Desk of string
    | Qty of int64
    | Avg_px of float
    | Limits of int32 list option
    | Flags of bool list
    | Tags of string list
    | Matrix of int list list
    | Deep of int option option option
    | Note of string option
  [@@deriving bin_io, sexp]

  type delta =
    | Set of row
    | Patch of update list
    | Remove
  [@@deriving bin_io, sexp]

  let schema : Schema.t =
    { name = "positions_by_account_and_desk"
    ; version = 1
    ; key = Int
    ; fields =
        [ field "desk" String
        ; field "qty" Int64
        ; field "avg_px" Float
        ; field "limits" (Option (List Int32)) ~default:"()"
        ; field "flags" (List Bool) ~default:"()"
        ; field "tags" (List String) ~default:"()"
        ; field "matrix" (List (List Int)) ~default:"()"
        ; field "deep" (Option (Option (Option Int))) ~default:"()"
        ; field "note" (Option String) ~default:"()"
        ]
    }
end

(* ---------- orders/v3: used by the stream, never declared ---------- *)

module Orders_v3 = struct
  module Side = struct
    type t =
      | Buy
      | Sell
    [@@deriving bin_io, sexp]
  end

  module Tif = struct
    type t =
      | Day
      | Ioc
      | Gtc
    [@@deriving bin_io, sexp]
  end

  type key = string [@@deriving bin_io, sexp]

  type row =
    { symbol : string
    ; px : float
    ; qty : int
    ; side : Side.t
    ; tif : Tif.t
    ; client : string option
    }
  [@@deriving bin_io, sexp]

  type update =
    | Symbol of string
    | Px of float
    | Qty of int
    | Side of Side.t
    | Tif of Tif.t
    | Client of string option
  [@@deriving bin_io, sexp]

  type delta =
    | Set of row
    | Patch of update list
    | Remove
  [@@deriving bin_io, sexp]

  let schema : Schema.t =
    { name = "orders"
    ; version = 3
    ; key = String
    ; fields =
        [ field "symbol" String
        ; field "px" Float
        ; field "qty" Int
        ; field "side" (Enum [ "Buy"; "Sell" ])
        ; field "tif" (Enum [ "Day"; "Ioc"; "Gtc" ]) ~default:"Day"
        ; field "client" (Option String) ~default:"()"
        ]
    }
end

(* ---------- The registry ---------- *)

type entry =
  { output : string (* the output name: Handshake pair and delta_msg.source_output *)
  ; schema : Schema.t
  ; fingerprint : string
  ; declared : bool (* listed in the stream's Handshake *)
  ; impl : (module S)
  }

let entry ?(declared = true) output (module M : S) =
  { output
  ; schema = M.schema
  ; fingerprint = Schema.fingerprint M.schema
  ; declared
  ; impl = (module M)
  }

(* Stream order: the Handshake declares the declared ones in this order. *)
let all =
  [ entry "vwap" (module Vwap_v2)
  ; entry "trades" (module Trades_v1)
  ; entry "book" (module Book_v4)
  ; entry "positions" (module Positions_v1)
  ; entry "orders" (module Orders_v3) ~declared:false
  ]

let declared = List.filter (fun e -> e.declared) all
let find_by_fingerprint fp = List.find_opt (fun e -> String.equal e.fingerprint fp) all

let () =
  (* The envelope has 32 bytes for the fingerprint. *)
  List.iter
    (fun e ->
      if String.length e.fingerprint > 32 then failwith ("fingerprint too long: " ^ e.fingerprint))
    all
