package rocketspec.driver;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Runs one scenario of the official RocketMQ 4.9.8 Java client against a name server and prints what the client
 * observed as one JSON object on stdout.
 *
 * <pre>java -cp CLASSES:lib/* rocketspec.driver.Main NAMESRV AREA.METHOD ARGS_JSON</pre>
 *
 * AREA.METHOD names the static method METHOD(Ctx) of class rocketspec.driver.{Area}Scenarios (area capitalised),
 * returning a Map. A failure prints {"error": ...} and exits 1. The JVM exits when the scenario returns, whatever
 * client threads are left.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] argv) {
        Map<String, Object> out;
        int status = 0;
        if (argv.length != 3) {
            System.err.println("usage: Main NAMESRV AREA.METHOD ARGS_JSON");
            System.exit(2);
        }
        String scenario = argv[1];
        try {
            int dot = scenario.indexOf('.');
            if (dot <= 0) {
                throw new IllegalArgumentException("scenario must be AREA.METHOD: " + scenario);
            }
            String area = scenario.substring(0, dot);
            String cls = "rocketspec.driver." + Character.toUpperCase(area.charAt(0)) + area.substring(1) + "Scenarios";
            Method method = Class.forName(cls).getMethod(scenario.substring(dot + 1), Ctx.class);
            Ctx ctx = new Ctx(argv[0], JSON.parseObject(argv[2]));
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> result = (Map<String, Object>) method.invoke(null, ctx);
                out = result;
            } finally {
                ctx.close();
            }
        } catch (InvocationTargetException e) {
            out = failure(e.getCause());
            status = 1;
        } catch (Throwable e) {
            out = failure(e);
            status = 1;
        }
        System.out.println(JSON.toJSONString(out, SerializerFeature.MapSortField, SerializerFeature.DisableCircularReferenceDetect));
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }

    static Map<String, Object> failure(Throwable e) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("error", String.valueOf(e));
        java.io.StringWriter trace = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(trace));
        System.err.println(trace);
        return out;
    }

    static JSONObject obj() {
        return new JSONObject(true);
    }
}
