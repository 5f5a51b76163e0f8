package httpapi

// signedQueryParams are the query variables of a signed request other than
// apiKey (the security scheme names it), from openapi/signed.json.
var signedQueryParams = []string{"signed-timestamp", "signed-signature", "signed-method", "signed-bodyhash"}

// addSignedQueryParams lists the signed-request query variables, with the
// optional method and body binding, on an operation that takes credentials
// (docs/auth.md, "Signed requests").
func addSignedQueryParams(op map[string]any) {
	params, _ := op["parameters"].([]any)
	for _, name := range signedQueryParams {
		params = append(params, map[string]any{"$ref": "#/components/parameters/" + name})
	}
	op["parameters"] = params
}
