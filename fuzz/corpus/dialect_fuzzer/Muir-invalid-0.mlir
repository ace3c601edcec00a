muir.grid @g axes = [] shape = []
