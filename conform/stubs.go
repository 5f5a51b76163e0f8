package conform

func orderChecks() []Check     { return nil }
func basicChecks() []Check     { return nil }
func digestChecks() []Check    { return nil }
func sessionChecks() []Check   { return nil }
func tokenPairChecks() []Check { return nil }
func pkTokenChecks() []Check   { return nil }
func signedChecks() []Check    { return nil }
func oauth1Checks() []Check    { return nil }
func openidChecks() []Check    { return nil }
func eventChecks() []Check     { return nil }
func webhookChecks() []Check   { return nil }
func hostileChecks() []Check   { return nil }

type receiver struct{}

func (r *receiver) close() {}
