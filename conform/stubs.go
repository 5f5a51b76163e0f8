package conform

func oauth1Checks() []Check  { return nil }
func openidChecks() []Check  { return nil }
func eventChecks() []Check   { return nil }
func webhookChecks() []Check { return nil }
func hostileChecks() []Check { return nil }

type receiver struct{}

func (r *receiver) close() {}
