package outbound

// SetNarrowedHook makes w call f each time one of its loops stands aside
// after a budget refusal (NarrowFor).
func SetNarrowedHook(w *Worker, f func()) { w.testNarrowed = f }
