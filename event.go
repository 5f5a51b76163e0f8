package yard

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Event types (docs/events.md). Every change a client can see is one of
// these, written in the transaction of the change.
const (
	EventBarkCreated   = "bark.created"
	EventBarkRunning   = "bark.running"
	EventBarkSucceeded = "bark.succeeded"
	EventBarkFailed    = "bark.failed"
	EventBarkCanceled  = "bark.canceled"
	EventBarkDeleted   = "bark.deleted"

	EventDogCreated = "dog.created"
	EventDogUpdated = "dog.updated"
	EventDogDeleted = "dog.deleted"

	EventOrderCreated = "order.created"
	EventOrderUpdated = "order.updated"

	EventCarCreated    = "car.created"
	EventCarUpdated    = "car.updated"
	EventCarDeleted    = "car.deleted"
	EventCarImported   = "car.imported"
	EventGarageCreated = "garage.created"
	EventGarageUpdated = "garage.updated"
	EventGarageDeleted = "garage.deleted"

	EventWebhookDisabled = "webhook.disabled"
)

// EventTypes lists every event type, in the order docs/events.md gives them.
var EventTypes = []string{
	EventBarkCreated, EventBarkRunning, EventBarkSucceeded, EventBarkFailed, EventBarkCanceled, EventBarkDeleted,
	EventDogCreated, EventDogUpdated, EventDogDeleted,
	EventOrderCreated, EventOrderUpdated,
	EventCarCreated, EventCarUpdated, EventCarDeleted, EventCarImported,
	EventGarageCreated, EventGarageUpdated, EventGarageDeleted,
	EventWebhookDisabled,
}

// Event is one change, as the store keeps it. Data is the resource right
// after the change in the store's own JSON form of the domain value (a
// *Dog, *Bark, *Order, *Car or *Garage marshalled as it is), an
// EventDeleted for a deletion, an EventImport for car.imported; the HTTP
// layer renders it as the resource's representation.
type Event struct {
	ID      EventID
	Type    string
	Subject string // the resource's path, as DogPath and the others make it
	// Owner is the person who may see the event; "" for administrators
	// only.
	Owner string
	Time  time.Time
	Data  json.RawMessage
}

// EventDeleted is the data of a deletion event.
type EventDeleted struct {
	ID string `json:"id"`
}

// EventImport is the data of a car.imported event: one batch of yard import.
type EventImport struct {
	Count   int    `json:"count"`   // cars written (created or replaced)
	First   string `json:"first"`   // the smallest car id of the batch
	Last    string `json:"last"`    // the largest
	Garages int    `json:"garages"` // garages written
}

// EventID is an event's place in the store's commit order: the writing
// transaction's number, then the event's ordinal inside it. Its text form
// is opaque to clients (32 hex digits) and sorts as the ids do.
type EventID struct {
	Tx  int64
	Seq int64
}

// String returns the opaque text form.
func (id EventID) String() string {
	return string(id.Append(make([]byte, 0, 32)))
}

// Append appends the text form of id to b.
func (id EventID) Append(b []byte) []byte {
	const digits = "0123456789abcdef"
	for _, v := range [2]uint64{uint64(id.Tx), uint64(id.Seq)} {
		for shift := 60; shift >= 0; shift -= 4 {
			b = append(b, digits[v>>uint(shift)&0xf])
		}
	}
	return b
}

// IsZero reports whether id is before every event.
func (id EventID) IsZero() bool { return id == EventID{} }

// Less reports whether id comes before o.
func (id EventID) Less(o EventID) bool {
	return id.Tx < o.Tx || id.Tx == o.Tx && id.Seq < o.Seq
}

// ParseEventID reads the text form; anything else is EINVALID naming field.
func ParseEventID(s, field string) (EventID, error) {
	b, err := hex.DecodeString(s)
	if len(s) != 32 || err != nil || s != strings.ToLower(s) {
		return EventID{}, Invalid("The event id is not one this server gave.",
			FieldError{Field: field, Message: "must be an event id (32 lower-case hex digits)"})
	}
	tx, seq := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	if tx > 1<<62 || seq > 1<<62 {
		return EventID{}, Invalid("The event id is not one this server gave.",
			FieldError{Field: field, Message: "out of range"})
	}
	return EventID{Tx: int64(tx), Seq: int64(seq)}, nil
}

// EventFilter selects events after a point, in order.
type EventFilter struct {
	After EventID
	// Resume says the client named After (also the zero id): when the
	// retention removed events after it, the read is EGONE. Without it
	// the zero id reads from the oldest event kept.
	Resume bool
	// Owner, when set, keeps the events that person may see.
	Owner *string
	// Owners, when not nil (and Owner is), keeps the events of these
	// people: a hub's read for the people it has streams of. Such a read
	// that reaches the end of what it can see ends its page there (Next),
	// past the other people's events, which need not be an event's id.
	Owners []string
	// Limit bounds the events returned (after filtering by Match).
	Limit int
	// Scan bounds the rows read; 0 is no bound beyond Limit.
	Scan int
	// Match, when set, keeps the events it accepts (types, subject).
	Match func(*Event) bool
}

// EventPage is a read of events: the events kept, and the id of the last
// event read (kept or not), where the next read starts (but see
// EventFilter.Owners).
type EventPage struct {
	Events []*Event
	Next   EventID
}

// EventReader reads the store's events.
type EventReader interface {
	// ReadEvents returns the committed events after f.After, in order.
	// Once an id has been returned, no event with a smaller id ever
	// appears. It answers EGONE when f.After is older than what the
	// retention kept.
	ReadEvents(ctx context.Context, f EventFilter) (*EventPage, error)
}

// Paths of the resources events name (their subjects, relative to the base
// URL).

// DogPath is the dog's identity (with the slash, docs/api.md).
func DogPath(id string) string { return "/v1/dogs/" + id + "/" }

// BarkPath is a bark's path.
func BarkPath(dogID, id string) string { return "/v1/dogs/" + dogID + "/barks/" + id }

// OrderPath is an order's path.
func OrderPath(id string) string { return "/order/" + id }

// CarPath is a car's path.
func CarPath(id string) string { return "/cars/" + id }

// GaragePath is a garage's path.
func GaragePath(id string) string { return "/garages/" + id }

// WebhookPath is a webhook subscription's path.
func WebhookPath(id string) string { return "/v1/webhooks/" + id }

// KnownEventPattern reports whether p names an event type, a family of
// them ("bark.*") or all ("*"): what a types= list and a webhook
// subscription's types may hold.
func KnownEventPattern(p string) bool {
	if HasControl(p) || strings.Contains(p, ",") {
		return false
	}
	return slices.ContainsFunc(EventTypes, func(t string) bool { return MatchEventType(p, t) })
}

// MatchEventTypes reports whether typ matches one of patterns; an empty
// list matches every type.
func MatchEventTypes(patterns []string, typ string) bool {
	return len(patterns) == 0 || slices.ContainsFunc(patterns, func(p string) bool { return MatchEventType(p, typ) })
}

// MatchEventType reports whether typ matches a pattern of a types= list: the
// type itself, "prefix.*", or "*".
func MatchEventType(pattern, typ string) bool {
	if pattern == "*" || pattern == typ {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(typ, p+".")
	}
	return false
}
