muir.grid @world axes = ["dp", "tp"] shape = [2, 4]
muir.grid @leni axes = ["x"] shape = [8]
muir.grid @cube axes = ["dp", "ep", "tp"] shape = [1, 2, 3]
muir.grid @ep2 axes = ["ep"] shape = [2]
muir.grid @hidden axes = ["dp"] shape = [1] {symfu