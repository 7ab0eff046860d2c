"""Input pipeline analyses: XProf's input pipeline analyzer and tf.data."""
