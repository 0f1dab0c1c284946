"""kafkalab's data pipeline on Spark, through PySpark: Spark schedules, shuffles and stores; kafkalab's own stages
decode every byte. pyspark is imported by the modules below, never by ``import kafkalab``."""
