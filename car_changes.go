package yard

// The change feed of cars and garages (docs/cars.md, "The search index"):
// the store stamps every write to them with its place in the commit order,
// and a reader (the search index) holds a CarPosition and reads what
// changed after it through a CarChangeHandler (store.DB.ReadCarChanges).

// CarPosition is how far a reader of the car changes got: it has read
// every change stamped before Horizon and, on PostgreSQL, every change of
// a transaction that Snapshot saw as ended. The zero value is "nothing
// read": store.DB.ReadCarChanges then reads everything.
type CarPosition struct {
	Horizon  int64
	Snapshot string // PostgreSQL's pg_snapshot of the read, as text; "" on SQLite
}

// IsZero reports whether p is the zero position.
func (p CarPosition) IsZero() bool { return p == CarPosition{} }

// CarChangeHandler receives what store.DB.ReadCarChanges reads. Garage and Car may
// keep the values they are given; Car's argument is the handler's own.
type CarChangeHandler struct {
	Garage        func(g *Garage)
	Car           func(c *Car)
	CarDeleted    func(id string)
	GarageDeleted func(id string)
}
