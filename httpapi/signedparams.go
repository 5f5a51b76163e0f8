package httpapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// credentialParams returns the component parameters (their keys in
// components/parameters) of the query variables the authentication chain
// reads (auth.QueryCredentials, asked of each scheme): each a query
// parameter of that name, except those an apiKey security scheme in the
// query describes, as its name or in its x-yard-query-variables (the other
// variables of its credentials). A variable with no parameter is an error,
// so a scheme that reads a new variable cannot go undocumented.
func credentialParams(vars []string, components map[string]any) ([]string, error) {
	params, _ := components["parameters"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	var keys []string
	for _, v := range vars {
		named := func(p any) bool {
			m, _ := p.(map[string]any)
			name, _ := m["name"].(string)
			return m["in"] == "query" && strings.EqualFold(name, v)
		}
		described := func(scheme any) bool {
			m, _ := scheme.(map[string]any)
			others, _ := m["x-yard-query-variables"].([]any)
			return m["type"] == "apiKey" && m["in"] == "query" && (named(m) ||
				slices.ContainsFunc(others, func(o any) bool { s, _ := o.(string); return strings.EqualFold(s, v) }))
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(schemes)), described) {
			continue
		}
		names := slices.Sorted(maps.Keys(params))
		i := slices.IndexFunc(names, func(k string) bool { return named(params[k]) })
		if i < 0 {
			return nil, fmt.Errorf("openapi: no query parameter documents the credential variable %q", v)
		}
		keys = append(keys, names[i])
	}
	return keys, nil
}

// addCredentialParams completes an operation that takes credentials
// (docs/auth.md), op with its responses: it lists the query variables of credentials (params,
// credentialParams), and the answers any password check can give, 429
// from the login rate limit and 503 when password hashing is busy.
func addCredentialParams(op, responses map[string]any, params []string) {
	list, _ := op["parameters"].([]any)
	for _, key := range params {
		list = append(list, map[string]any{"$ref": "#/components/parameters/" + key})
	}
	if len(list) > 0 { // never "parameters": null
		op["parameters"] = list
	}
	addResponse(responses, "429", "TooManyRequests")
	addResponse(responses, "503", "PasswordCheckBusy")
}

// addResponse gives responses, an operation's, the answer of status code:
// the component response name, unless it has one already.
func addResponse(responses map[string]any, code, name string) {
	if _, ok := responses[code]; !ok {
		responses[code] = map[string]any{"$ref": "#/components/responses/" + name}
	}
}
