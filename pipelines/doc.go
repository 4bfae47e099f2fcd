// Package pipelines holds the project's runnable pipelines, one command per
// folder: enrich is the main job (JSON Lines records enriched by an HTTP
// service through the async transform). Each runs on embedded prism by
// default and takes Beam's --runner flag.
package pipelines
