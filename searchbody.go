package yard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SearchClassCar is the only $class a search may name.
const SearchClassCar = "car"

// SearchRequest is the parsed body of POST /searches.
type SearchRequest struct {
	Name  string
	Query Query
}

// ParseSearchBody reads a search in either body shape of docs/cars.md:
//
//	{"$class":"car","$q":{"$eq":{"color":"red","garage":{"state":"CA"}},"$ne":{"make":"Ford"}},"name":"reds"}
//	{"color":"red","make":"Ford","garage":{"state":"CA"},"name":"reds"}
//
// In $q the operator keys are $eq and $ne, and $lt, $le, $gt, $ge for
// numbers; a key without '$' inside $q is read as $eq. A value is a string,
// a number (doors, year) or an array of them meaning any of them; for the
// garage, null means "in no garage", a string is its id and an object holds
// id, name and state conditions. Unknown fields are refused. Errors are
// EINVALID (or EMALFORMED for broken JSON) and name the field by its JSON
// path.
func ParseSearchBody(data []byte) (SearchRequest, error) {
	var top map[string]json.RawMessage
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		// Another JSON value: the same answer as for any body (docs/api.md).
		return SearchRequest{}, Invalid("A field has the wrong type.", FieldError{Field: "(document)", Message: "must be an object"})
	}
	if err := strictObject(data, &top); err != nil {
		return SearchRequest{}, Errorf(EMALFORMED, "The search body is not a JSON object: %v.", err)
	}
	var req SearchRequest
	var b queryBuilder
	if raw, ok := top["name"]; ok {
		if err := json.Unmarshal(raw, &req.Name); err != nil || !ValidSearchName(req.Name) {
			return SearchRequest{}, Invalid("The search name is not valid.",
				FieldError{Field: "name", Message: "must be 1-64 letters, digits, '-', '_' or '.', start with a letter or digit, and not be a reserved word"})
		}
	}
	_, hasQ := top["$q"]
	_, hasClass := top["$class"]
	if hasQ || hasClass {
		for k, raw := range top {
			switch k {
			case "name":
			case "$class":
				var class string
				if err := json.Unmarshal(raw, &class); err != nil || !strings.EqualFold(class, SearchClassCar) {
					return SearchRequest{}, fieldInvalid("$class", `must be "car"`)
				}
			case "$q":
				var ops map[string]json.RawMessage
				if err := strictObject(raw, &ops); err != nil {
					return SearchRequest{}, fieldInvalid("$q", "must be an object of operators ($eq, $ne, ...)")
				}
				for _, opKey := range slices.Sorted(maps.Keys(ops)) {
					op, ok := dollarOps[opKey]
					if !ok {
						if strings.HasPrefix(opKey, "$") {
							return SearchRequest{}, fieldInvalid("$q."+opKey, "unknown operator (use $eq, $ne, $lt, $le, $gt or $ge)")
						}
						// A plain field name inside $q is an equality.
						if err := addJSONField(&b, "$q", "", opKey, OpEq, ops[opKey]); err != nil {
							return SearchRequest{}, err
						}
						continue
					}
					var fields map[string]json.RawMessage
					if err := strictObject(ops[opKey], &fields); err != nil {
						return SearchRequest{}, fieldInvalid("$q."+opKey, "must be an object mapping fields to values")
					}
					for _, name := range slices.Sorted(maps.Keys(fields)) {
						if err := addJSONField(&b, "$q."+opKey, "", name, op, fields[name]); err != nil {
							return SearchRequest{}, err
						}
					}
				}
			default:
				return SearchRequest{}, fieldInvalid(k, "unknown field (a $q search has $class, $q and name)")
			}
		}
		if !hasQ {
			return SearchRequest{}, fieldInvalid("$q", "is required with $class")
		}
	} else {
		for _, k := range slices.Sorted(maps.Keys(top)) {
			if k == "name" {
				continue
			}
			if err := addJSONField(&b, "", "", k, OpEq, top[k]); err != nil {
				return SearchRequest{}, err
			}
		}
	}
	req.Query = b.query()
	return req, nil
}

var dollarOps = map[string]string{"$eq": OpEq, "$ne": OpNe, "$lt": OpLt, "$le": OpLe, "$gt": OpGt, "$ge": OpGe}

// addJSONField adds the condition name op value, where name may be a
// field, "garage" with an object value, or a dotted garage path. at is
// the JSON path of the enclosing object, for errors; prefix is "garage."
// inside a garage object.
func addJSONField(b *queryBuilder, at, prefix, name string, op string, raw json.RawMessage) error {
	where := joinPath(at, name)
	if prefix == "" && strings.EqualFold(name, "garage") {
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) > 0 && trimmed[0] == '{' {
			var sub map[string]json.RawMessage
			if err := strictObject(raw, &sub); err != nil {
				return fieldInvalid(where, "must be an object of garage fields")
			}
			if len(sub) == 0 {
				return fieldInvalid(where, "names no garage field (id, name, state)")
			}
			for _, k := range slices.Sorted(maps.Keys(sub)) {
				switch strings.ToLower(k) {
				case "id", "name", "state":
				default:
					return fieldInvalid(joinPath(where, k), "unknown garage field (use id, name or state)")
				}
				if err := addJSONField(b, where, "garage.", k, op, sub[k]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	path, fi, ok := canonicalField(prefix + name)
	if !ok {
		return fieldInvalid(where, fmt.Sprintf("unknown field (use %s, vendor or garage)", strings.Join(QueryFields(), ", ")))
	}
	values, err := jsonValues(raw, fi)
	if err != nil {
		return fieldInvalid(where, err.Error())
	}
	if len(values) == 0 {
		return fieldInvalid(where, "an empty list matches nothing; leave the field out instead")
	}
	if op != OpEq && op != OpNe && len(values) > 1 {
		return fieldInvalid(where, "operator "+op+" takes one value")
	}
	for _, v := range values {
		if msg := b.add(path, fi, op, v, false); msg != "" {
			return fieldInvalid(where, msg)
		}
	}
	return nil
}

// jsonValues reads a JSON value (or array of values) of a field as
// strings in the query grammar's terms: null becomes "null".
func jsonValues(raw json.RawMessage, fi fieldInfo) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	items := []json.RawMessage{raw}
	if len(raw) > 0 && raw[0] == '[' {
		// Unmarshal empties items before it appends the array's values.
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("must be a value or an array of values")
		}
	}
	var out []string
	for _, it := range items {
		v, err := jsonValue(it, fi)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func jsonValue(raw json.RawMessage, fi fieldInfo) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case string(raw) == "null":
		if !fi.nullable {
			return "", fmt.Errorf("must not be null")
		}
		return "null", nil
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("is not a valid string")
		}
		if s == "null" && fi.nullable {
			// JSON has its own null; the string is a name, not "no garage".
			return "", fmt.Errorf(`use JSON null, not the string "null", for "in no garage"`)
		}
		return s, nil
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		if fi.kind != KindNumber {
			return "", fmt.Errorf("must be a string")
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return "", fmt.Errorf("must be a whole number")
		}
		return strconv.FormatInt(n, 10), nil
	}
	return "", fmt.Errorf("must be a string, a number or an array of them")
}

// strictObject decodes a JSON object, refusing trailing data and
// duplicate-free semantics aside, anything that is not an object.
func strictObject(data []byte, v *map[string]json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if *v == nil {
		return fmt.Errorf("null is not an object")
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

func joinPath(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func fieldInvalid(field, msg string) error {
	return Invalid(fmt.Sprintf("Bad search field %s: %s.", field, msg), FieldError{Field: field, Message: msg})
}

// ValidSearchName reports whether name can name a saved search: the rules
// of client-chosen ids (ValidClientID), so a name never contains '=' and
// /search/{segment} can tell a name from a query.
func ValidSearchName(name string) bool { return ValidClientID(name) }
