package turn

// Merged reports whether t's message was merged into a queued run of its
// conversation (strategy merge): t makes no run of its own and follows
// that one, whose reply id (ReplyID) and events are that run's.
func (t *Turn) Merged() bool { return t.merged }
