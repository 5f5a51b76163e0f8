package conform

func eventChecks() []Check   { return nil }
func webhookChecks() []Check { return nil }
func hostileChecks() []Check { return nil }

type receiver struct{}

func (r *receiver) close() {}
