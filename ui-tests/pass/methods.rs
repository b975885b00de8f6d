use profiler_core::profiled;

struct Layer {
    weights: Vec<f32>,
}

impl Layer {
    #[profiled(layer = "mlp", phase = "init")]
    fn new(n: usize) -> Self {
        Layer {
            weights: vec![1.0; n],
        }
    }

    #[profiled(layer = "mlp", phase = "fwd")]
    fn forward(&self, x: f32) -> f32 {
        self.weights.iter().map(|w| w * x).sum()
    }

    #[profiled(layer = "mlp", phase = "update")]
    fn update(&mut self, lr: f32) {
        for w in &mut self.weights {
            *w -= lr;
        }
    }

    #[profiled(layer = "mlp", phase = "free")]
    fn into_weights(self) -> Vec<f32> {
        self.weights
    }

    #[allow(clippy::boxed_local)]
    #[profiled]
    fn by_box(self: Box<Self>) -> usize {
        self.weights.len()
    }
}

fn main() {
    let mut layer = Layer::new(2);
    assert_eq!(layer.forward(2.0), 4.0);
    layer.update(0.5);
    assert_eq!(layer.forward(2.0), 2.0);
    assert_eq!(Box::new(Layer::new(3)).by_box(), 3);
    assert_eq!(layer.into_weights(), vec![0.5, 0.5]);
    profiler_core::step();
}
