"""The KRaft quorum controller's rules (apache/kafka 3.9.0; 4.0 and 4.1 for KIP-966 ELR).

One module per Kafka class, named after it. They share the core's values and election
algorithms with the ZK controller and produce KRaft's metadata records; nothing here is
wired into the engine yet.
"""
