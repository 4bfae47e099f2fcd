// Package pipelines holds the project's runnable pipelines, one command per
// folder: enrich is the main job (JSON Lines records enriched by an HTTP
// service through the async transform); quickstart is the README's
// complete program (a stream of orders priced through an HTTP service);
// bench measures the transform. Each runs on embedded prism by default and
// takes Beam's --runner flag.
package pipelines
