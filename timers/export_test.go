package timers

// BlindRunner is a Runner that tells the planner nothing of the runner's
// pace but that a bundle has ended: the planner's rules blind to the pace.
func BlindRunner() Runner { return Runner{ended: true} }
